"""How much a report tells of a diagnosed bug: course.toml's [feedback] reveal. A module of its own, so
that the wording (grader.words) and the result types (grader.results) both import it and not
each other."""

from enum import StrEnum


class Reveal(StrEnum):
    """How much a report tells of a diagnosed bug (course.toml [feedback] reveal)."""
    FIX = "fix"  # the bug and the code it should be
    BUG = "bug"  # the bug, not the code to write
    CHECK = "check"  # only the failed checks and their hints: no diagnosis
