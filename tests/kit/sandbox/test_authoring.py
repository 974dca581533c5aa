"""Changing the course: a check of weight 0 is informational (reported, never counted), a course where
no check of a component counts is refused, and `grade --help` names every command."""

from grader.cli import COMMANDS


def test_grade_help_names_every_command():
    from grader.commands import grade

    text = " ".join(grade.parser().format_help().split())
    assert all(f"grade {c}" in text for c in COMMANDS), text
