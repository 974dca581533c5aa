"""The stages of a grading (grader.grading.stages) on a hand-made Grading, with no worker: the report they
build is scoring's over the run's record, built once and frozen; a run's faults, the hidden tier left
out, --only and the course's table of bugs (read once) show in it as a grading shows them."""

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader import words
from grader.findings import Note, Noted
from grader.grading import stages
from grader.grading.only import narrow
from grader.grading.run import Grading, Options
from grader.judging import diagnosis, scoring
from grader.results import ComponentStatus, Details, Fault, Outcome, Reason, Status
from tests.kit import strategies as s

A1 = s.COURSE.assignment("assignment1")
TABLE = diagnosis.load(s.COURSE)


def graded(assignment, outcomes: dict[str, Outcome], *, has_reference: bool = True, options: Options | None = None,
           faults: tuple[Fault, ...] = ()):
    """(run, report): `outcomes` taken through the stages after the worker, and the report built."""
    run = Grading(s.COURSE, assignment, Path("/sub"), options or Options(), None, has_reference)
    run.record.results, run.record.faults = dict(outcomes), list(faults)
    for stage in (stages.score, stages.diagnose):
        stage(run)
    return run, stages.report(run)


def said_by(bug: str) -> dict[str, Outcome]:
    """The outcomes of `bug`'s failing public checks as the table stores them."""
    return {check: Outcome(said["status"], said["reason"], said["message"],
                           Details(**{k: said[k] for k in ("expected", "got", "example") if k in said}))
            for check, said in TABLE[bug]["failing"].items()}


@s.KIT
@given(s.graded(st.one_of(s.ran, s.not_counted)))
def test_a_runs_report_scores_what_scoring_scores_on_its_record(case):
    assignment, outcomes = case
    run, report = graded(assignment, outcomes)
    # on the CPU the GPU tier is left out, not even listed
    assert set(run.record.unavailable) == {chk.id for c in assignment.components for chk in c.checks
                                           if chk.tier == "cuda"}
    alone = s.scored(assignment, outcomes, unavailable=run.record.unavailable)
    assert [(c.name, c.score, c.status) for c in report.components] == \
        [(c.name, c.score, c.status) for c in alone.components]
    assert report.score == alone.score and report.max_score == alone.max_score


def test_the_report_is_frozen_once_built():
    _, report = graded(A1, s.all_passed(A1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.notes = []  # type: ignore[misc]
    assert all(c.status == ComponentStatus.PASSED == "passed" for c in report.components)


def test_each_restart_of_the_submissions_process_is_a_note_five_at_most():
    faults = tuple(Fault("crash", f"crash {i}", "layer_norm_matches_torch") for i in range(7))
    _, report = graded(A1, s.all_passed(A1), faults=faults)
    restarts = [n for n in report.notes if n.kind == Noted.RESTARTED]
    assert restarts == [Note(Noted.RESTARTED, f"crash {i}") for i in range(5)]
    assert words.noted(restarts[0]) == "The submission's process was restarted: crash 0"


def test_without_the_reference_hidden_checks_are_listed_skipped_and_left_out():
    _, report = graded(A1, s.all_passed(A1), has_reference=False)
    hidden = [t for c in report.components for t in c.checks if t.tier == "hidden"]
    assert hidden and all((t.outcome.status, t.outcome.reason) == (Status.SKIPPED, Reason.UNAVAILABLE)
                          for t in hidden)
    assert report.score == report.max_score
    assert Note(Noted.PUBLIC_ONLY) in report.notes


def test_a_bug_of_the_table_is_named_on_its_component_with_the_table_read_once(monkeypatch):
    bug = "layer_norm_eps_outside_sqrt"
    reads = []
    monkeypatch.setattr(diagnosis, "load", lambda course: reads.append(course) or TABLE)
    _, report = graded(A1, {**s.all_passed(A1), **said_by(bug)})
    named = {c.name: c for c in report.components}["LayerNorm"]
    assert named.diagnosis is not None and named.diagnosis.bug == bug
    assert named.telling in TABLE[bug]["failing"]
    assert len(reads) == 1


def test_only_grades_the_checks_asked_for_says_so_and_names_no_bug():
    bug = "layer_norm_eps_outside_sqrt"
    only = frozenset(list(TABLE[bug]["failing"])[:1])
    _, report = graded(narrow(A1, only), {**s.all_passed(A1), **said_by(bug)}, options=Options(only=only))
    assert [t.id for c in report.components for t in c.checks] == sorted(only)
    assert report.notes[-1] == Note(Noted.ONLY, names=tuple(only))
    assert words.noted(report.notes[-1]).startswith("--only: 1 check run")
    assert all(c.diagnosis is None for c in report.components)


def test_shrinking_again_shows_the_shrunk_failure_and_never_undoes_one():
    """A failure shown unshrunk is run again with shrinking: a failure it ends on is shown (an
    exception may shrink to a mismatch, as in the student's run); a rerun that passes or times out
    changes nothing."""
    first = {c: Outcome(Status.ERROR, Reason.EXCEPTION, "first", unshrunk=True) for c in "abc"}
    again = {"a": Outcome(Status.FAILED, Reason.MISMATCH, "shrunk"), "b": Outcome(Status.PASSED),
             "c": Outcome(Status.TIMEOUT, Reason.TIMEOUT, "slow")}

    def rerun(checks):
        assert set(checks) == set("abc")
        return dict(again)

    results = {**first, **stages.shrunk(first, {}, rerun)}
    assert results["a"] is again["a"]
    assert results["b"] is first["b"] and results["c"] is first["c"]


def test_scoring_alone_is_the_same_report_as_its_parts():
    outcomes = {**s.all_passed(A1), **said_by("layer_norm_eps_outside_sqrt")}
    judged = scoring.Judged(outcomes)
    assert scoring.score(s.COURSE, A1, Path("/sub"), judged).components == scoring.components(A1, judged)


@pytest.mark.parametrize("before", ["absent", "imported"])
def test_a_grading_run_never_loads_hypothesiss_patch_writer_and_leaves_the_import_system_as_it_was(monkeypatch,
                                                                                                  before):
    """Hypothesis's pytest plugin imports its patch writer at each failing check's report (a failed import,
    tried again each time, without libcst): inside a grading's pytest run it fails at once, and the
    run leaves sys.modules as it found it."""
    import sys
    import types

    from grader.grading import suites

    name = "hypothesis.extra._patching"
    if before == "absent":
        monkeypatch.delitem(sys.modules, name, raising=False)
    else:
        writer = types.ModuleType(name)  # one that would import: the run must still refuse it
        writer.get_patch_for = lambda *args: None  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, writer)
    kept = sys.modules.get(name)
    with suites._no_patch_writer(), pytest.raises(ImportError):
        from hypothesis.extra._patching import get_patch_for  # noqa: F401
    assert sys.modules.get(name) is kept and (name in sys.modules) == (before == "imported")


def test_the_grading_suites_run_with_the_patch_writer_refused_and_get_it_back_after(monkeypatch, tmp_path):
    """grader.grading.suites.pytest_run itself holds the patch writer off while pytest runs (pytest.main
    stood in for: no worker, no suite is run here)."""
    import sys
    from types import SimpleNamespace

    import pytest as real_pytest

    from grader.grading import suites

    name = "hypothesis.extra._patching"
    monkeypatch.delitem(sys.modules, name, raising=False)
    seen = []

    def main(args, plugins):
        seen.append(name in sys.modules and sys.modules[name] is None)
        return real_pytest.ExitCode.OK

    monkeypatch.setattr(real_pytest, "main", main)
    check = A1.components[0].checks[0].id
    # the public tier: no reference, no second set
    student = SimpleNamespace(sandbox=SimpleNamespace(dir=tmp_path), reference=None, second_set=False)
    assert suites.pytest_run(s.COURSE, student, {check: ()}) == {}
    assert seen == [True] and name not in sys.modules
