"""Assignment 3 end to end: one-bug submissions, a correct variant of assignment2 underneath."""

import pytest

from tests.kit.conftest import (
    full_marks,
    grade_json,
    grade_one_bug,
    mutant,
    scores,
)
from tests.kit.mutants import BUGS, DROPOUT, FUSED_PROJECTION, MHA


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment3" and b not in DROPOUT))
def test_a_classic_bug_costs_its_own_component_only_and_is_named_there_in_one_screen(tmp_path, bug):
    report = grade_one_bug(tmp_path, bug)
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
