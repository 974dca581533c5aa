"""The helper grader of `grade --watch` (grader.grading.split): where a grading is cut, and a reply that
nobody collected never answers the next job. That a split grading's JSON is one process's, a cut
inside a component that hangs included, is tests/kit/sandbox/test_reproducible.py's."""

from grader import load_course
from grader.grading.split import Helper, Job, split
from tests.kit.conftest import ROOT, SOLUTIONS


def test_the_cut_falls_where_the_halves_balance_between_components_where_that_is_as_good():
    components = [("A", ["a1", "a2"]), ("B", ["b1"]), ("C", ["c1", "c2"])]
    assert split(components, {"c1": 2.0}) == (["a1", "a2", "b1"], ["c1", "c2"])  # 3 | 3
    assert split(components, {"a1": 5.0}) == (["a1"], ["a2", "b1", "c1", "c2"])  # 5 | 4: inside A
    assert split([("A", ["a1", "a2"]), ("B", ["b1"])], {}) == (["a1", "a2"], ["b1"])  # 1 | 2 as good as 2 | 1
    assert split([("A", ["a1", "a2"])], {}) == (["a1"], ["a2"])  # one component: cut inside it
    assert split([("A", ["a1"])], {}) == (["a1"], [])


def _job(*checks: str) -> Job:
    return Job(assignment="assignment1", submission=SOLUTIONS, device="cpu", gpu=None, reference=None, forbidden=[],
               checks=dict.fromkeys(checks, ()), quick=frozenset())


def test_an_abandoned_jobs_reply_is_dropped_and_never_answers_the_next():
    helper = Helper(load_course(ROOT / "course.toml"))
    try:
        assert not helper.ready()  # not before its warm-up
        helper.warm(_job("layer_norm_has_gamma_and_beta"))
        assert helper.ready(wait=300), "the helper did not warm up"
        helper.submit(_job("layer_norm_has_gamma_and_beta"))
        helper.abandon()  # as after Ctrl-C in the middle of a grading
        assert helper.ready(wait=300)
        helper.submit(_job("feed_forward_has_named_layers"))
        done = helper.collect()
        assert done is not None and list(done.results) == ["feed_forward_has_named_layers"]
        assert done.results["feed_forward_has_named_layers"].status == "passed"
        assert helper.jobs == 1
    finally:
        helper.close()
    assert helper.proc.returncode == 0  # it ended when its stdin closed


def test_ctrl_c_while_the_helpers_reply_is_read_never_shows_that_reply_in_a_later_grading(monkeypatch):
    """A save under --watch interrupts the grading under way; landing while the helper's reply is read, it
    left that reply's rest in the pipe and the count of replies owed at none: the next grading read the
    interrupted one's far half as its own (the solutions' passes shown for the stubs). The helper is now
    taken as broken there, and the next grading gets a new one."""
    import pytest

    from grader.grading.warm import Grader

    with Grader(load_course(ROOT / "course.toml"), helper=True) as grader:
        # the helper's warm-up job
        grader.grade(assignment=grader.course.assignment("assignment1"), submission=SOLUTIONS)
        assert grader.await_helper(300), "the helper did not warm up"
        read, armed = Helper._read, [True]

        def interrupted(self, n):
            if armed[0]:
                armed[0] = False
                raise KeyboardInterrupt
            return read(self, n)

        monkeypatch.setattr(Helper, "_read", interrupted)
        with pytest.raises(KeyboardInterrupt):
            grader.grade(assignment=grader.course.assignment("assignment1"), submission=SOLUTIONS)
        assert not armed[0], "the grading did not read a reply from the helper"
        stubs = grader.grade(assignment=grader.course.assignment("assignment1"), submission=ROOT / "assignments")
    passed = [check.id for comp in stubs.components for check in comp.checks if check.outcome.status == "passed"]
    assert stubs.score == 0 and not passed, passed
