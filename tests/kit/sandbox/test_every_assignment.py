"""Every assignment: the reference gets full marks, the generated stubs get nothing."""

import pytest

from grader.course import load
from tests.kit.conftest import ROOT, grade_json

# each assignment's components in course.toml's order: a component an instructor adds is in them
COMPONENTS = {name: [c.name for c in a.components] for name, a in load(ROOT / "course.toml").assignments.items()}
MAX_SCORE = {"assignment1": 40, "assignment2": 40, "assignment3": 60, "assignment4": 50}


@pytest.mark.parametrize("assignment", sorted(COMPONENTS))
def test_solutions_get_full_marks_in_both_tiers(solution_reports, assignment):
    report = solution_reports(assignment)
    assert report["score"] == report["max_score"] == MAX_SCORE[assignment]
    assert [c["name"] for c in report["components"]] == COMPONENTS[assignment]
    assert all(t["status"] == "passed" for c in report["components"] for t in c["tests"])
    assert any(t["hidden"] for c in report["components"] for t in c["tests"])  # the hidden tier ran too
    assert not any(c["diagnosis"] for c in report["components"])


@pytest.mark.parametrize("assignment", sorted(COMPONENTS))
def test_stubs_get_nothing_and_every_component_is_not_attempted(assignment):
    report = grade_json(ROOT / "assignments", assignment)
    assert report["score"] == 0
    assert [c["name"] for c in report["components"]] == COMPONENTS[assignment]
    assert {c["status"] for c in report["components"]} == {"not attempted"}
    assert all(t["reason"] == "not_attempted" for c in report["components"] for t in c["tests"])
    assert not any(c["diagnosis"] for c in report["components"])
