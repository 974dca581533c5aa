"""The reports the docs show are what the kit prints today: each text block of a page that draws a
component's panel is held, line for line, to the report of the tree the page names, graded through the
warm grader (cached: conftest.grade_report; test_assignment1 grades the same trees) and drawn at 80
columns. The README's report, a student kit's, is held to the release's in tests/kit/sandbox/test_release.py."""

from tests.kit.conftest import ROOT
from tests.kit.report_blocks import SHOWN, blocks


def test_every_page_that_shows_a_report_is_checked():
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md") if blocks(p.read_text())}
    assert pages == set(SHOWN)
