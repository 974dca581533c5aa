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


def test_a_syntax_error_in_one_file_costs_only_its_own_component_even_through_the_packages_init(tmp_path):
    """assignment2/__init__.py imports every file, multi_head_attention.py does not compile: the
    components of the other files are graded on their own files (both tiers), MultiHeadAttention
    gets nothing."""
    tree = mutant(tmp_path, {
        "assignment2/__init__.py": [('"""\n', '"""\n\nfrom .attention import *  # noqa\nfrom .masks import *  # noqa\n'
                                     'from .multi_head_attention import *  # noqa\n')],
        "assignment2/multi_head_attention.py": [("def forward(self,", "def forward(self,,")]})
    report = grade_json(tree, "assignment2")
    got, full = scores(report), full_marks(report)
    assert got["MultiHeadAttention"] == 0
    assert {n: s for n, s in got.items() if n != "MultiHeadAttention"} == {
        n: s for n, s in full.items() if n != "MultiHeadAttention"}, [
        (c["name"], t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
