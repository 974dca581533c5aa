"""Stand-ins for a composite's parts, worker side: the reference's parts run in the grader,
and the submission sees them through these (their grader side: grader.suite.parts)."""
