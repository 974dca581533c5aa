"""Parity, a composite's status: a composite whose checks fail while one of its parts fails its own
public checks cannot be judged without the reference, so its failures that run through the part wait
("waiting", not charged); a failure of its own is charged beside them (the student's grade against the
instructor's: tests/kit/sandbox/test_parity.py)."""

from grader.results import CheckResult, ComponentResult, Outcome


def _check(check_id: str, status: str, waiting_on: tuple[str, ...] = ()) -> CheckResult:
    return CheckResult(check_id, "public", 1.0, Outcome(status, "mismatch" if status == "failed" else ""),
                       waiting_on=waiting_on)


def test_a_component_with_a_failure_of_its_own_is_charged_for_it_and_does_not_wait():
    part = ("scaled_dot_product_attention",)
    waits = ComponentResult("MultiHeadAttention", "assignment2/multi_head_attention.py", 16.0, 16.0,
                            [_check("a", "passed"), _check("b", "failed", part)], part)
    assert (waits.status, waits.waiting_on, waits.checks[1].earned) == ("waiting", part, True)
    own = ComponentResult("MultiHeadAttention", "assignment2/multi_head_attention.py", 8.0, 16.0,
                          [_check("a", "failed"), _check("b", "failed", part)], part)
    assert own.status == "partial"  # its own failure shows; the waiting one is still not charged
