"""The trust boundary: `host` runs in the grader and starts the submission's process;
`child` is everything that runs inside that process, copied there whole."""
