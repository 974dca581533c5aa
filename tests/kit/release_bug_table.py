"""The instructors' bug table and where the release keeps its student form (tests/kit/unit/ and
sandbox/test_release.py)."""

from pathlib import Path

from grader.judging import diagnosis
from tests.kit.kit_course import COURSE

BUGS_JSON = Path("tests/grading/public/expected/bugs.json")
TABLE = diagnosis.load(COURSE)  # the instructors' table, whole
