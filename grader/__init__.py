"""The Transformer course kit's autograder: `grade assignmentN`, and the library under it.

    from grader import load_course, grade_submission
    course = load_course("course.toml")
    report = grade_submission(course=course, assignment="assignment1", submission="assignments")

In a notebook: `grader.check("assignment1")` shows the report in the cell and returns it as a dict.

Importing this package is cheap: the heavy parts (torch, pytest, Hypothesis) load on use.
"""

from grader.course import ConfigError
from grader.course import load as load_course


def grade_submission(**kwargs):
    """Grade one submission (keyword-only; see grader.grading.pipeline.grade_submission)."""
    from grader.grading.pipeline import grade_submission

    return grade_submission(**kwargs)


def check(assignment: str, submission=None, **kwargs) -> dict:
    """Grade, show the report (in a notebook's cell) and return the JSON report
    (see grader.interactive.notebook.check)."""
    from grader.interactive.notebook import check

    return check(assignment, submission, **kwargs)


__all__ = ["ConfigError", "check", "grade_submission", "load_course"]
