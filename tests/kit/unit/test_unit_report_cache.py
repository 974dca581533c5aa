"""The kit's report cache (tests/kit/conftest.py, KIT_CACHE): a report is reused across runs only for the
same tree, assignment, device and sources; any change of the suites, the reference, course.toml or
the tree grades afresh, and a report whose checks timed out or crashed is not kept across runs."""

import re
import shutil

from grader.results import Outcome
from tests.kit import strategies as s
from tests.kit.conftest import ROOT, SOLUTIONS, report_key, steady


def course_in(tmp_path):
    """The kit's course.toml with its reference and suites copied under `tmp_path`."""
    text = (ROOT / "course.toml").read_text()
    for key, folder in (("reference", "solutions"), ("suites", "tests/grading"), ("assignments", "assignments")):
        copy = tmp_path / key
        shutil.copytree(ROOT / folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
        text = re.sub(rf'^{key} = "[^"]+"', f'{key} = "{copy}"', text, flags=re.M)
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


def test_the_key_changes_with_the_tree_the_suites_the_reference_the_course_the_assignment_and_the_device(tmp_path):
    course = course_in(tmp_path)
    tree = tmp_path / "tree"
    shutil.copytree(SOLUTIONS, tree, ignore=shutil.ignore_patterns("__pycache__"))
    key = report_key(tree, "assignment1", course, "cpu")
    assert report_key(tree, "assignment1", course, "cpu") == key
    assert report_key(tree, "assignment2", course, "cpu") != key
    assert report_key(tree, "assignment1", course, "cuda") != key
    keys = {key}
    edits = [tree / "assignment1" / "layer_norm.py", tmp_path / "suites" / "public" / "test_assignment1.py",
             tmp_path / "reference" / "assignment1" / "layer_norm.py", course]
    from tests.kit import conftest

    for path in edits:
        path.write_text(path.read_text() + "\n# edited\n")
        conftest._SOURCES.clear()  # what a new test process reads afresh
        keys.add(report_key(tree, "assignment1", course, "cpu"))
    assert len(keys) == len(edits) + 1


def test_a_report_whose_checks_timed_out_or_crashed_is_not_kept_across_runs():
    assignment = s.ASSIGNMENTS[0]
    outcomes = s.all_passed(assignment)
    assert steady(s.scored(assignment, outcomes))
    check = next(iter(outcomes))
    for said in (Outcome("timeout", "timeout"), Outcome("error", "crash"), Outcome("error", "grader")):
        assert not steady(s.scored(assignment, {**outcomes, check: said}))
    assert steady(s.scored(assignment, {**outcomes, check: Outcome("failed", "mismatch")}))
