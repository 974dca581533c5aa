"""Instructors' authoring tools: stubs from the solutions, the public tier's stored outputs."""
