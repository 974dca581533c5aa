"""The words for what grader.judging.forbidden found, and for a component held for review (issue 51: a flag
is a score), the same wherever they are shown: the terminal report, the batch's feedback (Gradescope) and
the class summary. The findings are data (grader.findings.Sighting; `held`: the points a flagged
component's checks earned, held at 0 under course.toml's `[policy] flagged = "hold"`, the default).
Standard library only, as grader.words: the batch's outputs import it without rich."""

from __future__ import annotations

from grader.findings import Seen, Sighting
from grader.trim import inert

HOW = {Seen.SOURCE: "in the source", Seen.EXECUTED: "when it ran"}
FORBIDDEN = ("Scored 0: this component uses what the course forbids it. Build it from allowed operations (its "
             "docstring says which are not).")
COUNTED = "Flagged for your instructor (no points lost): code that can reach an API without naming it."


def finding(found: Sighting) -> str:
    """'operator.attrgetter at assignment1/layer_norm.py:7 (in the source)': the submission's text made inert."""
    return f"{inert(found.what)} at {inert(found.where)} ({HOW[found.how]})"


def held(points: float) -> str:
    """A flagged component's first line where the course holds flags: what is held and until when (one line
    at 100 columns: the report keeps to one screen). `points`: what its checks earned."""
    return f"Held for review: its {points:g} points are at 0 until your instructor reviews these lines:"


def flagged(points: float | None) -> str:
    """The flagged panel's first line: held for review (`points`, what its checks earned), or only reported."""
    return COUNTED if points is None else held(points)


def summary_row(points: float | None, lines: list[dict]) -> str:
    """A held component in the class summary: 'held 10 pts: operator.attrgetter at ...:7; ...'."""
    said = "; ".join(f"{inert(str(f.get('what')))} at {inert(str(f.get('where')))}" for f in lines)
    return f"held {points:g} pts: {said}" if isinstance(points, (int, float)) else f"held: {said}"


HELD_TITLE = ("Held for review (each at 0 until an override releases it: points `release` in the overrides "
              "file)")
