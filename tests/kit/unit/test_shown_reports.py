"""The reports the docs show are what the kit prints today: every page that draws a component's panel is
one tests/kit/report_blocks.SHOWN names, so that its text blocks are held to the kit's reports (line for
line: tests/kit/sandbox/test_shown_reports.py)."""

from tests.kit.conftest import ROOT
from tests.kit.report_blocks import SHOWN, blocks


def test_every_page_that_shows_a_report_is_checked():
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md") if blocks(p.read_text())}
    assert pages == set(SHOWN)
