"""What `grade release` tells students of the performance feedback, and the torch it pins: the student's
course.toml keeps the feedback the README describes, and the pin is what CI installs (pure functions of
the course: no release is built here; setting up, grading and debugging:
tests/kit/sandbox/test_student_readme.py)."""

import re
import tomllib

from grader import load_course
from grader.authoring.readme import readme_text
from grader.authoring.release import course_text
from grader.authoring.torch_pin import TORCH
from tests.kit.conftest import ROOT
from tests.kit.kit_course import COURSE


def test_student_course_keeps_the_performance_feedback_the_readme_describes(tmp_path):
    assert COURSE.performance is not None and COURSE.performance.points == 0
    path = tmp_path / "course.toml"
    path.write_text(course_text(COURSE, performance=True).replace('"tests/grading"', f'"{ROOT / "tests/grading"}"'))
    assert tomllib.loads(path.read_text())["performance"] == tomllib.loads((ROOT / "course.toml").read_text())[
        "performance"]
    assert load_course(path).performance == COURSE.performance
    text = " ".join(readme_text(COURSE).split())
    assert "It is feedback only and costs no points; the report shows it with `--verbose`." in text
    assert "`MultiHeadAttention` (against `nn.MultiheadAttention`)" in text


def test_the_torch_pin_is_what_ci_installs():
    ci = (ROOT / ".ci/run").read_text()
    assert "torch_pin.py" in ci and "torch==" in ci, "CI installs torch from grader/authoring/torch_pin.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", TORCH), TORCH
