"""Waiting told right (issue 44): a component whose failures run through a failing part keeps their
points for now; its row, the total and the line under the table say so in the same words, and what
happens to them once the part passes."""

import io
from pathlib import Path

from rich.console import Console

from grader import course as config
from grader.judging import scoring
from grader.judging.attribution import Blame
from grader.render import report
from grader.results import Outcome, to_json
from tests.kit.conftest import ROOT

COURSE = config.load(ROOT / "course.toml")
A1 = COURSE.assignment("assignment1")


def _graded(verbose: bool = False):
    """assignment1 with TokenEmbedding failing its own check and one of TransformerEmbedding's 9 checks
    failing through it, graded without the reference (a student's copy: no run on its parts)."""
    results = {chk.id: Outcome("passed") for comp in A1.components for chk in comp.checks}
    results["token_embedding_matches_torch"] = Outcome("failed", "mismatch", "TokenEmbedding output differs")
    results["transformer_embedding_matches_its_parts"] = Outcome("failed", "mismatch", "output differs")
    blame = {"transformer_embedding_matches_its_parts": Blame(("TokenEmbedding",), None)}
    graded = scoring.score(COURSE, A1, Path("/sub"), scoring.Judged(results, blame=blame), 1.0)
    out = io.StringIO()
    report.render(graded, Console(file=out, width=100, no_color=True, force_terminal=False), verbose=verbose)
    return graded, out.getvalue()


def test_waiting_points_are_said_to_count_for_now_in_the_row_the_total_and_the_footer():
    graded, text = _graded()
    te = next(c for c in graded.components if c.name == "TransformerEmbedding")
    assert te.status == "waiting" and te.score == te.max_score == 6
    spec = next(c for c in A1.components if c.name == "TransformerEmbedding")
    share = next(c.weight for c in spec.checks if c.id == "transformer_embedding_matches_its_parts") \
        / sum(c.weight for c in spec.checks)
    assert te.provisional == round(6 * share, 2) == 0.6  # the waiting check's share of the points
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("│ TransformerEmbedding"))
    row = " ".join(" ".join(lines[at:at + 2]).replace("│", " ").split())  # its status may wrap to 2 lines
    # what the points wait on, in the row (issue 52)
    assert "6 / 6" in row and "waiting on TokenEmbedding: 0.6 pts for now" in row, row
    total = next(line for line in lines if "│ total" in line)
    assert f"{graded.score:g} / 40" in total and "0.6 pts of it for now" in total, total
    footer = " ".join(text.split())
    assert "Waiting: 0.6 points of the total are for checks of TransformerEmbedding" in footer, footer
    assert "through your TokenEmbedding, which fails its own checks" in footer
    assert ("Their points count for now (in the total); once TokenEmbedding passes its own checks they "
            "are graded again, and each check that still fails then loses its points.") in footer
    # the words that read as "these points are not in the total" are gone
    assert "not counted" not in footer.lower() and "Not counted" not in _graded(verbose=True)[1]


def test_the_panel_of_a_waiting_check_and_the_json_say_the_same():
    graded, verbose = _graded(verbose=True)
    said = " ".join(verbose.replace("│", " ").split())
    assert ("Its points count for now (in the total); once TokenEmbedding passes its own checks it is graded "
            "again, and if it still fails, it then loses its points.") in said, said
    data = to_json(graded)
    te = next(c for c in data["components"] if c["name"] == "TransformerEmbedding")
    assert te["provisional"] == 0.6 and te["waiting_on"] == ["TokenEmbedding"] and te["score"] == 6
    assert data["provisional"] == 0.6
    check = next(t for t in te["tests"] if t["id"] == "transformer_embedding_matches_its_parts")
    assert "its points count for now" in check["note"] and "graded again" in check["note"]
