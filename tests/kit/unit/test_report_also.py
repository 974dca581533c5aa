"""'Also failed' is true (issue 52): of a component's other failed checks, those the diagnosis explains are
said to be the same bug, each public one it does not explain is named as not explained, and the hidden
ones (which the diagnosis does not read) are named apart, or counted where panels share a screen."""

import io
from pathlib import Path

from rich.console import Console

from grader import course as config
from grader.findings import Diagnosis, Found
from grader.judging import scoring
from grader.render import report
from grader.results import Details, Outcome
from tests.kit.conftest import ROOT

COURSE = config.load(ROOT / "course.toml")
A1 = COURSE.assignment("assignment1")
LN = next(c for c in A1.components if c.name == "LayerNorm")
PUBLIC = [chk.id for chk in LN.checks if chk.tier == "public"]
HIDDEN = [chk.id for chk in LN.checks if chk.tier == "hidden"]


def _said(failing: list[str], explains: list[str] | None, also: tuple[str, ...] = ()) -> str:
    results = {chk.id: Outcome("passed") for comp in A1.components for chk in comp.checks}
    for check in [*failing, *also]:
        results[check] = Outcome("failed", "mismatch", f"{check} differs", Details(example="x: [1.0]"))
    graded = scoring.score(COURSE, A1, Path("/sub"), scoring.Judged(results), 1.0)
    if explains is not None:
        what = "LayerNorm with the unbiased variance"
        graded.components[0].diagnosis = Diagnosis(Found.TABLE, "layer_norm_unbiased_variance", what=what,
                                                   explains=tuple(explains))
    out = io.StringIO()
    report.render(graded, Console(file=out, width=100, no_color=True, force_terminal=False))
    return " ".join(out.getvalue().replace("│", " ").split())


def test_each_other_failure_is_explained_by_the_bug_or_named_as_not():
    failing = [*PUBLIC[:4], HIDDEN[0]]
    said = _said(failing, explains=PUBLIC[:3])
    # one of the explained ones is shown in full; the fourth public one is a failure of its own
    assert (f"Also failed (4): 2 by the same bug; not explained by it: {PUBLIC[3]}; hidden, which the diagnosis "
            f"does not read: {HIDDEN[0]}. grade --verbose shows each.") in said, said


def test_without_a_diagnosis_every_other_failure_is_named():
    said = _said([*PUBLIC[:2], HIDDEN[0]], explains=None)
    assert "Also failed (2): " in said and all(check in said for check in [*PUBLIC[:2], HIDDEN[0]]), said


def test_several_failing_components_name_what_the_bug_does_not_explain():
    ff = next(c for c in A1.components if c.name == "PositionwiseFeedForward").checks[0].id
    said = _said([*PUBLIC[:3], HIDDEN[0]], explains=PUBLIC[:2], also=(ff,))
    assert f"Also failed (3): 1 by the same bug; not explained by it: {PUBLIC[2]}; 1 hidden (grade --verbose " \
           "shows each)." in said, said
