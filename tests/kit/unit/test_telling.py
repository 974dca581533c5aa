"""The most telling check: the failure a report shows in full is the one that says most about the bug
(grader.judging.telling): a hint that names a bug of the table first, then the check fewer of its bugs
fail, then the smallest example; a failure that waits on a part is not shown (on graded bugs:
tests/kit/sandbox/test_telling.py)."""

from grader.judging.telling import most_telling
from grader.results import CheckResult, ComponentResult, Details, Outcome


def _failed(check_id: str, hint: str, example: str = "x", reason: str = "mismatch") -> CheckResult:
    return CheckResult(check_id, "public", 1.0, Outcome("failed", reason, "", Details(hint=hint, example=example)))


def test_a_hint_that_names_the_bug_comes_first_then_the_check_fewer_bugs_fail_then_the_smallest_example():
    table = {"one": {"component": "C", "message": "heads split with view(B, h, T, d_k) without the transpose",
                     "failing": {"named": {}, "rare": {}, "common": {}}},
             "two": {"component": "C", "message": "the output projection left out", "failing": {"common": {}}}}
    checks = [_failed("common", "differs", "a"), _failed("rare", "differs", "ab"),
              _failed("named", "not view(B, n_heads, T, d_k) but view(B, T, n_heads, d_k)", "abcdef")]
    comp = ComponentResult("C", "a/c.py", 0.0, 1.0, checks, ())
    assert most_telling(comp, table).id == "named"  # type: ignore[union-attr]
    comp.checks = checks[:2]
    assert most_telling(comp, table).id == "rare"  # failed by one bug of two
    comp.checks = [_failed("rare", "differs", "abc"), _failed("rare2", "differs", "ab")]
    table["one"]["failing"]["rare2"] = {}
    assert most_telling(comp, table).id == "rare2"  # as specific: the smaller example
    comp.checks = [CheckResult("waits", "public", 1.0, Outcome("failed", "mismatch"), waiting_on=("P",))]
    assert most_telling(comp, table) is None  # not charged here: nothing to show in full
