"""The panel (issue 44): a check that compares with values built from the student's own output is not the
panel while a check compared with a correct implementation's values failed (a graded bug's "expected":
tests/kit/sandbox/test_panel_expected.py)."""

from grader.judging.telling import most_telling
from grader.results import CheckResult, ComponentResult, Details, Outcome


def test_a_check_built_on_the_students_output_comes_after_any_true_one_and_says_so():
    own = CheckResult("own", "public", 1.0, Outcome("failed", "mismatch", "differs", Details(
        hint="gamma and beta swapped", example="x", basis="your own output times gamma plus beta")))
    true = CheckResult("true", "public", 1.0, Outcome("failed", "mismatch", "differs", Details(example="x" * 50)))
    table = {"swap": {"component": "C", "message": "gamma and beta swapped", "failing": {"own": {}, "true": {}}}}
    comp = ComponentResult("C", "a/c.py", 0.0, 1.0, [own, true], ())
    assert most_telling(comp, table).id == "true"  # type: ignore[union-attr]
    comp.checks = [own]
    assert most_telling(comp, table).id == "own"  # type: ignore[union-attr]
