"""Assignment 2 end to end: one-bug submissions, correct solutions written differently."""

import pytest

from tests.kit.conftest import (
    full_marks,
    grade_json,
    grade_one_bug,
    mutant,
    scores,
)
from tests.kit.mutants import BUGS, DROPOUT, VARIANTS


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment2" and b not in DROPOUT))
def test_a_classic_bug_costs_its_own_component_only_and_is_named_there_in_one_screen(tmp_path, bug):
    report = grade_one_bug(tmp_path, bug)
    broken = next(c for c in report["components"] if c["name"] == BUGS[bug].component)
    failed = [t for t in broken["tests"] if t["status"] != "passed"]
    assert failed and all(t["message"] for t in failed), broken
    assert any(t.get("hint") and t.get("expected") for t in failed), failed  # a student learns what and why


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_correct_solution_written_differently_gets_full_marks(tmp_path, variant):
    report = grade_json(mutant(tmp_path, VARIANTS[variant]), "assignment2")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
