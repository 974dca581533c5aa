"""`grade stubs [--check]`: regenerate assignments/ from the solutions' marked blocks."""

from pathlib import Path

from grader.commands import regenerate
from grader.course import Course
from grader.course_table import ConfigError


def write_all(course: Course, check: bool = False) -> list[Path]:
    """grader.authoring.stubs.write_all, with a malformed marker as a one-line error naming file and line."""
    from grader.authoring import stubs

    try:
        return stubs.write_all(course, check=check)
    except stubs.MarkerError as e:
        raise ConfigError(f"{e} (solution markers must pair up inside a function)") from None


def main(argv: list[str]) -> int:
    return regenerate(argv, name="stubs", description="Generate assignments/ from the solutions' marked blocks.",
                      what="stubs", write_all=write_all)
