"""The reports the docs show are what the kit prints today: each text block of a page that draws a
component's panel is held, line for line, to the report of the tree the page names, graded through the
warm grader (cached: conftest.grade_report; test_assignment1 grades the same trees) and drawn at 80
columns. The README's report, a student kit's, is held to the release's in tests/kit/sandbox/test_release.py."""

import pytest

from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, grade_report, mutant, report_lines
from tests.kit.heldout import HELDOUT
from tests.kit.report_blocks import SHOWN, blocks


def within(shown: list[str], printed: list[str]) -> bool:
    return any(printed[i:i + len(shown)] == shown for i in range(len(printed) - len(shown) + 1))


@pytest.mark.parametrize("page", sorted(SHOWN))
def test_a_page_s_report_is_what_the_kit_prints(page, tmp_path):
    printed = {}
    for name in SHOWN[page]:
        bug = BUGS.get(name) or HELDOUT[name]
        report = grade_report(mutant(tmp_path / name, bug.patches), bug.assignment)
        printed[name] = [line.rstrip() for line in report_lines(report, width=80)]
    shown = blocks((ROOT / page).read_text())
    assert shown, page
    for block in shown:
        assert any(within(block, lines) for lines in printed.values()), \
            f"{page} shows:\n" + "\n".join(block) + "\n\nthe kit prints:\n" + "\n\n".join(map("\n".join,
                                                                                             printed.values()))
