"""Assignment 1 end to end: the JSON interface, one-bug submissions."""

import pytest

from grader.course import load
from tests.kit.conftest import (
    ROOT,
    SOLUTIONS,
    grade_json,
    grade_one_bug,
    mutant,
)
from tests.kit.mutants import BUGS, DROPOUT


def test_json_report_has_the_fields_of_the_interface(solution_reports):
    report = solution_reports("assignment1")
    assert {"assignment", "submission", "score", "max_score", "components"} <= set(report)
    assert report["submission"] == str(SOLUTIONS)
    names = [c["name"] for c in report["components"]]
    assert names == [c.name for c in load(ROOT / "course.toml").assignment("assignment1").components]
    for c in report["components"]:
        assert {"name", "score", "max_score", "tests"} <= set(c)
        for t in c["tests"]:
            assert {"id", "status", "hidden", "message"} <= set(t)
            assert t["status"] in {"passed", "failed", "error", "timeout", "skipped"}


@pytest.mark.parametrize("bug", sorted(b for b in BUGS if BUGS[b].assignment == "assignment1" and b not in DROPOUT))
def test_a_classic_bug_costs_its_own_component_only_and_is_named_there_in_one_screen(tmp_path, bug):
    report = grade_one_bug(tmp_path, bug)
    broken = next(c for c in report["components"] if c["name"] == BUGS[bug].component)
    assert any(t["status"] == "failed" and t["message"] for t in broken["tests"]), broken


def test_a_check_that_ends_in_an_exception_shows_the_inputs_that_raised_it(tmp_path):
    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [(
        "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n",
        "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
        "        if x.shape[-1] > 3:\n            raise RuntimeError('too wide')\n")]})
    report = grade_json(tree, "assignment1")
    norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
    raised = [t for t in norm["tests"] if t["reason"] == "exception" and "Activations(" in t.get("example", "")]
    assert raised, [(t["id"], t.get("example")) for t in norm["tests"]]
    assert all("too wide" in t["message"] for t in raised)

