"""What the grading suites import: check helpers, proxies for the submission, the reference."""
