"""The Transformer course kit's autograder: `grade assignmentN`, and the library under it.

    from grader import load_course, grade_submission
    course = load_course("course.toml")
    report = grade_submission(course=course, assignment="assignment1", submission="assignments")

In a notebook: `grader.check("assignment1")` shows the report in the cell and returns it as a dict.

Importing this package is cheap: the heavy parts (torch, pytest, Hypothesis) load on use.
"""

from pathlib import Path
from typing import TYPE_CHECKING

from grader.course import load as load_course
from grader.course_table import ConfigError

if TYPE_CHECKING:  # the heavy parts load on use (the module's docstring)
    from grader.course import Course
    from grader.grading.run import Options, Services
    from grader.results import Report
    from grader.sandbox.host import Sandbox


def grade_submission(*, course: "Course", assignment: str, submission: str | Path, sandbox: "Sandbox | None" = None,
                     options: "Options | None" = None, services: "Services | None" = None) -> "Report":
    """Grade one submission (see grader.grading.pipeline.grade_submission): `assignment` by its name, the
    one place it is looked up."""
    from grader.grading.pipeline import grade_submission

    return grade_submission(course=course, assignment=course.assignment(assignment), submission=Path(submission),
                            sandbox=sandbox, options=options, services=services)


def check(assignment: str, submission: str | Path | None = None, *, only: str | None = None, verbose: bool = False,
          course: str | Path | None = None) -> dict:
    """Grade, show the report (in a notebook's cell) and return the JSON report
    (see grader.interactive.notebook.check)."""
    from grader.interactive.notebook import check

    return check(assignment, submission, only=only, verbose=verbose, course=course)


__all__ = ["ConfigError", "check", "grade_submission", "load_course"]
