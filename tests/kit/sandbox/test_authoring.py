"""Changing the course: `grade --help` names every command (a check's weight:
tests/kit/unit/test_authoring.py)."""

from grader.cli import COMMANDS


def test_grade_help_names_every_command():
    from grader.commands import grade

    text = " ".join(grade.parser().format_help().split())
    assert all(f"grade {c}" in text for c in COMMANDS), text
