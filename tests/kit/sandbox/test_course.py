"""The kit's generated files are up to date, and course.toml matches the suites."""

import subprocess
import sys

from tests.kit.conftest import ROOT


def test_stubs_are_generated_from_the_solutions():
    proc = subprocess.run([sys.executable, "-m", "grader", "stubs", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, f"run `grade stubs`:\n{proc.stdout}{proc.stderr}"
