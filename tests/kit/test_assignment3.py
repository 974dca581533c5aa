"""Assignment 3 end to end: one-bug submissions, a correct variant of assignment2 underneath."""

import pytest

from tests.kit.conftest import (
    ONE_SCREEN,
    as_json,
    assert_loses_only_in,
    full_marks,
    grade_json,
    grade_report,
    mutant,
    report_lines,
    scores,
)
from tests.kit.mutants import BUGS, FUSED_PROJECTION, MHA


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment3"))
def test_a_bug_costs_points_in_its_component_only(tmp_path, bug):
    result = grade_report(mutant(tmp_path, BUGS[bug].patches), "assignment3")
    report = as_json(result)
    assert_loses_only_in(report, BUGS[bug].component)
    assert len(report_lines(result)) <= ONE_SCREEN, "\n".join(report_lines(result))
    broken = next(c for c in report["components"] if c["name"] == BUGS[bug].component)
    failed = [t for t in broken["tests"] if t["status"] != "passed"]
    assert failed and all(t["message"] for t in failed), broken


def test_a_fused_projection_gets_full_marks_in_assignment3(tmp_path):
    report = grade_json(mutant(tmp_path, {MHA: FUSED_PROJECTION}), "assignment3")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]


def test_layer_norms_default_eps_is_charged_in_assignment1_and_nowhere_in_assignment3(tmp_path):
    """A LayerNorm whose default eps is not the contract's (a public implementation's 1e-12) fails
    LayerNorm's own check; the layers built on it lose nothing for it."""
    report = grade_json(mutant(tmp_path, BUGS["layer_norm_default_eps_1e_12"].patches), "assignment3")
    assert scores(report) == full_marks(report), scores(report)
