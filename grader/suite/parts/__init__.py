"""The reference's parts, grader side: built, sized, described and run for the stand-ins in
the submission's process (their worker side: grader.sandbox.child.standins)."""
