"""The Transformer course kit's autograder: `grade assignmentN`, and the library under it.

    from grader import load_course, grade_submission
    course = load_course("course.toml")
    report = grade_submission(course=course, assignment="assignment1", submission="assignments")

Importing this package is cheap: the heavy parts (torch, pytest, Hypothesis) load on use.
"""

from grader.course import ConfigError
from grader.course import load as load_course


def grade_submission(**kwargs):
    """Grade one submission (keyword-only; see grader.grading.grade_submission)."""
    from grader.grading import grade_submission

    return grade_submission(**kwargs)


__all__ = ["ConfigError", "grade_submission", "load_course"]
