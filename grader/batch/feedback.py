"""A student's feedback: the Report rendered as they see it after `grade`, as text and as HTML. The batch's
workers write it once a submission is graded (grader.batch.worker); a regrade writes it again from the
report's JSON where an override or lateness changed it (grader.batch.regrade.rewrite_overridden)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from grader.findings import Note, Noted
from grader.results import Report, Tier


def feedback(report: Report, student: str, *, hidden: bool) -> tuple[str, str]:
    """The report as a student sees it after `grade`, as text (80 columns) and as the same text in
    HTML (rich's export: escaped, colours inline); without `hidden`, the hidden tier shows only as
    counts per component, neither ids nor messages."""
    from rich.console import Console

    from grader.render import report as render

    # the duration as the report's JSON keeps it (to two decimals): a regrade renders the feedback again
    # from there, and must print what this did
    shown = dataclasses.replace(report, submission=Path(student), duration=round(report.duration, 2),
                                notes=list(report.notes))
    if not hidden:
        withheld = []
        components = []
        for c in report.components:
            secret = [t for t in c.checks if t.tier == Tier.HIDDEN]
            if secret:
                earned = sum(t.earned for t in secret)
                withheld.append(f"{c.name} {earned}/{len(secret)}")  # a name and a count, no words
            components.append(dataclasses.replace(c, checks=[t for t in c.checks if t.tier != Tier.HIDDEN]))
        shown = dataclasses.replace(shown, components=components)  # the Report is frozen
        if withheld:
            shown.notes.append(Note(Noted.HIDDEN_PASSED, names=tuple(withheld)))
    console = Console(file=io.StringIO(), width=80, record=True, color_system=None, force_terminal=False)
    render.render(shown, console)
    return console.export_text(clear=False), console.export_html(inline_styles=True, code_format="{code}")
