"""Assignment 2 end to end: one-bug submissions, correct solutions written differently."""

import pytest

from grader import load_course
from tests.kit.conftest import (
    ROOT,
    SOLUTIONS,
    full_marks,
    grade_json,
    grade_one_bug,
    mutant,
    scores,
)
from tests.kit.mutants import BUGS, DROPOUT, VARIANTS

COURSE = load_course(ROOT / "course.toml")


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
    assert not any(c["diagnosis"] for c in report["components"])  # correct code: nothing named, no "looks like"
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]



# (assignment, the file with a syntax error, the components that lose everything: those of that file and
# of the files that import it); the assignment's __init__.py imports every file
BROKEN_FILES = [
    ("assignment2", "multi_head_attention.py", {"MultiHeadAttention"}),
    ("assignment2", "masks.py", {"make_pad_mask", "make_causal_mask", "make_tgt_mask"}),
    ("assignment1", "positional_encoding.py", {"PositionalEncoding", "TokenEmbedding", "TransformerEmbedding"}),
]


@pytest.mark.parametrize(("assignment", "broken", "losers"), BROKEN_FILES, ids=[b for _, b, _ in BROKEN_FILES])
def test_a_syntax_error_costs_only_the_components_of_that_file_and_of_those_importing_it(tmp_path, assignment,
                                                                                         broken, losers):
    """Even through the package's __init__.py, which imports every file: the other components are graded
    on their own files (both tiers)."""
    init = (SOLUTIONS / assignment / "__init__.py").read_text()
    imports = "".join(f"from .{f.removesuffix('.py')} import *  # noqa\n" for f in COURSE.assignment(assignment).files)
    first = next(line for line in (SOLUTIONS / assignment / broken).read_text().splitlines() if line.startswith("def ")
                 or line.startswith("class "))
    tree = mutant(tmp_path, {f"{assignment}/__init__.py": [(init, init + "\n" + imports)],
                             f"{assignment}/{broken}": [(first, first.replace("(", "(,", 1))]})
    report = grade_json(tree, assignment)
    got, full = scores(report), full_marks(report)
    assert {n for n, s in got.items() if s == 0} == losers, got
    assert {n: s for n, s in got.items() if n not in losers} == {n: s for n, s in full.items() if n not in losers}, [
        (c["name"], t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
