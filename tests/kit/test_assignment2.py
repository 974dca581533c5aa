"""Assignment 2 end to end: one-bug submissions, correct solutions written differently."""

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
from tests.kit.mutants import BUGS, VARIANTS


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment2"))
def test_a_bug_costs_points_in_its_component_only(tmp_path, bug):
    result = grade_report(mutant(tmp_path, BUGS[bug].patches), "assignment2")
    report = as_json(result)
    assert_loses_only_in(report, BUGS[bug].component)
    assert len(report_lines(result)) <= ONE_SCREEN, "\n".join(report_lines(result))
    broken = next(c for c in report["components"] if c["name"] == BUGS[bug].component)
    failed = [t for t in broken["tests"] if t["status"] != "passed"]
    assert failed and all(t["message"] for t in failed), broken
    assert any(t.get("hint") and t.get("expected") for t in failed), failed  # a student learns what and why


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_correct_solution_written_differently_gets_full_marks(tmp_path, variant):
    report = grade_json(mutant(tmp_path, VARIANTS[variant]), "assignment2")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
