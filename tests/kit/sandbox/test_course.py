"""The kit's generated files are up to date: `grade stubs --check` finds the stubs as the solutions
generate them (course.toml against the suites: tests/kit/unit/test_course.py)."""

import subprocess
import sys

from tests.kit.conftest import ROOT


def test_stubs_are_generated_from_the_solutions():
    proc = subprocess.run([sys.executable, "-m", "grader", "stubs", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, f"run `grade stubs`:\n{proc.stdout}{proc.stderr}"
