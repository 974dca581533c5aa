"""The same submission always gets the same grade: a check's draws are seeded from the digest Hypothesis
itself computes of its source, parametrized or not (graded however it is run:
tests/kit/sandbox/test_reproducible.py)."""


def test_the_digest_kept_for_a_check_is_hypothesis_own():
    """Derandomized draws are seeded from the digest of the check's source: the one kept per function
    (grader.suite.plugin._digest_once) is the one Hypothesis computes, parametrized or not."""
    from hypothesis import core
    from hypothesis.internal import reflection

    from grader.suite import plugin

    def check(student, x):
        return x + 1

    plugin._digest_once()
    kept = core.function_digest
    plugin._digest_once()  # every grading sets it up: wrapped once
    assert core.function_digest is kept
    first = core.function_digest(check)
    assert first == reflection.function_digest(check) and core.function_digest(check) == first
    check._hypothesis_internal_add_digest = b"[case 2]"  # type: ignore[attr-defined]
    assert core.function_digest(check) == reflection.function_digest(check) != first
