"""The report at any width from 50 columns (issue 52): the points and statuses are never cut (names and
counts wrap, the points stay whole), a panel's title keeps the file to open, a check's name is shown
whole, and "Start here: ... (not attempted)" never breaks inside its parentheses.

Rendered from reports already graded: every entry of the golden record (tests/kit/golden_record.json:
the solutions and a bug of each component of every assignment), rebuilt with grader.results.from_json,
and hand-made outcomes for what the record lacks (not attempted, waiting on a part). Nothing is graded:
about a second in all."""

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from grader import course as config
from grader.judging import scoring
from grader.judging.attribution import Blame
from grader.render import report
from grader.report_json import from_json
from grader.results import Outcome, Report
from tests.kit import golden
from tests.kit.conftest import ROOT, as_json

WIDTHS = (50, 64, 80, 120)
COURSE = config.load(ROOT / "course.toml")
RECORD = golden.load()


def rebuilt(name: str) -> Report:
    entry = RECORD[name]
    spec = COURSE.assignment(entry["assignment"])
    return from_json(entry["json"], weights={c.id: c.weight for comp in spec.components for c in comp.checks},
                     depends={comp.name: comp.depends for comp in spec.components}, title=spec.title)


def text(graded: Report, width: int) -> str:
    out = io.StringIO()
    report.render(graded, Console(file=out, width=width, no_color=True, force_terminal=False))
    return out.getvalue()


def assert_whole(graded: Report, said: str, width: int) -> None:
    lines = said.splitlines()
    assert max(len(line) for line in lines) <= width, said
    assert "…" not in said, said  # rich's mark of a cut cell or title
    cells = [[cell.strip() for cell in line.split("│")] for line in lines if line.startswith("│")]
    for c in graded.components:
        points = f"{c.score:g} / {c.max_score:g}"
        assert any(points in row for row in cells), (c.name, points, said)  # whole, in a cell of its own
        # a status wraps between its words: each is whole in some line of the table
        for word in str(c.status).split():
            assert any(word in cell.replace(":", " ").split() for row in cells for cell in row), (c.name, word, said)
    total = f"{graded.score:g} / {graded.max_score:g}"
    assert any(total in row for row in cells), said
    titles = [line for line in lines if line.startswith("╭─ ")]
    for c in graded.components:
        mine = [t for t in titles if re.match(rf"╭─ {re.escape(c.name)}[: ]", t)]
        assert all(c.file.rpartition("/")[2] in t for t in mine), (c.name, mine)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(RECORD))
def test_every_recorded_report_keeps_its_points_statuses_and_files_whole(name, width):
    graded = rebuilt(name)
    said = text(graded, width)
    assert_whole(graded, said, width)
    # each check shown in full is named whole, in its panel's title or its first row
    flat = " ".join(said.replace("│", " ").split())
    for c in graded.components:
        if c.telling and f"  {c.telling}" not in said:
            assert re.sub(r"\s", "", c.telling) in re.sub(r"[\s│]", "", said), (c.telling, said)
    assert flat


def test_a_rebuilt_report_writes_the_json_it_was_rebuilt_from():
    for name, entry in RECORD.items():
        assert golden.normalise_json(as_json(rebuilt(name)), measured=False) == entry["json"], name


def _hand_made(outcome: Outcome, failing: tuple[str, ...] = (), blame: dict | None = None) -> Report:
    spec = COURSE.assignment("assignment1")
    results = {chk.id: outcome for comp in spec.components for chk in comp.checks}
    results.update({check: Outcome("failed", "mismatch", "output differs") for check in failing})
    return scoring.score(COURSE, spec, Path("/sub"), scoring.Judged(results, blame=blame or {}), 1.0)


@pytest.mark.parametrize("width", WIDTHS)
def test_not_attempted_keeps_its_parentheses_on_one_line(width):
    graded = _hand_made(Outcome("error", "not_attempted", "not attempted (NotImplementedError)"))
    said = text(graded, width)
    assert_whole(graded, said, width)
    start = said[said.index("Start here:"):]
    assert "(not attempted)" in start, start


@pytest.mark.parametrize("width", WIDTHS)
def test_waiting_points_stay_whole(width):
    # a student's copy: TransformerEmbedding's check fails through a failing TokenEmbedding, and waits
    graded = _hand_made(Outcome("passed"), ("token_embedding_matches_torch", "transformer_embedding_matches_its_parts"),
                        {"transformer_embedding_matches_its_parts": Blame(("TokenEmbedding",), None)})
    assert graded.provisional > 0
    said = text(graded, width)
    assert_whole(graded, said, width)
    assert f"{graded.provisional:g}" in said
