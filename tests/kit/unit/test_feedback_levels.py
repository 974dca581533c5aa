"""course.toml [feedback] reveal (issue 44), how much a report tells of a diagnosed bug: the student's
release keeps the level, and the student's grade follows it (the levels:
tests/kit/sandbox/test_feedback_levels.py)."""

from grader import course as config
from grader.authoring.release import course_text
from grader.reveal import Reveal
from tests.kit.conftest import ROOT
from tests.kit.feedback_course import _course


def test_the_release_keeps_the_level(tmp_path):
    course = config.load(_course(tmp_path, "check"))
    released = course_text(course, folders={"assignments": "assignments", "suites": "tests/grading"})
    assert '[feedback]\nreveal = "check"' in released
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "course.toml").write_text(released)
    assert config.load(tmp_path / "student" / "course.toml").reveal is Reveal.CHECK  # the student's grade follows
    assert "[feedback]" not in course_text(config.load(ROOT / "course.toml"))
