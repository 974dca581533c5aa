"""Tests of the sandbox tier: each grades in the kit's sandbox or starts a subprocess (python -m grader, a worker,
a venv)."""
