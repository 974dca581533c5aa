"""Attribution (grader.judging.attribution) on hand-made outcomes: which composite checks are blamed on which
failing parts, and what is run again with the reference's parts. `run` stands for the sandbox's runs:
it answers from a table and records what it was asked."""

from hypothesis import given
from hypothesis import strategies as st

from grader.findings import Attributed
from grader.judging.attribution import MISSING, _explains, attribute, target
from grader.results import Details, Outcome, Reach, Reason, Status
from tests.kit import strategies as s


class Runs:
    """What attribution asked to run: (checks -> parts swapped in, quick, one_failure), answered from
    `answers` (check id -> outcome; a check not there passes, or is left out with `omit`). The other runs
    (the parts left the submission's, Reach.OWN or ECHOED; the reference's composite fed them, Reach.FED)
    are kept apart, in `controls`: the control runs answered from `own` (check id -> outcome; a check not
    there passes), the fed runs from `fed` (a check not there could not run fed: UNSUPPORTED)."""

    def __init__(self, answers: dict[str, Outcome] | None = None, omit: frozenset[str] = frozenset(),
                 own: dict[str, Outcome] | None = None, fed: dict[str, Outcome] | None = None):
        self.answers, self.omit, self.own, self.fed, self.asked = answers or {}, omit, own or {}, fed or {}, []
        self.controls: list[tuple[dict, Reach]] = []

    def __call__(self, checks: dict[str, tuple[str, ...]], quick=frozenset(), one_failure=False,
                 reach=Reach.SWAPPED):
        if reach == Reach.FED:
            self.controls.append((dict(checks), reach))
            return {c: self.fed.get(c, UNSUPPORTED) for c in checks}
        if reach != Reach.SWAPPED:
            self.controls.append((dict(checks), reach))
            return {c: self.own.get(c, s.PASSED) for c in checks}
        self.asked.append((dict(checks), quick, one_failure))
        return {c: self.answers.get(c, s.PASSED) for c in checks if c not in self.omit}


# what a check run fed ends in where the grader cannot serve it (grader.suite.fed.Unsupported)
UNSUPPORTED = Outcome(Status.ERROR, Reason.GRADER, "the check could not use what the code returned (Unsupported)")


def failing_part(composite, data, outcomes) -> tuple[str, dict]:
    """One of `composite`'s parts of its own assignment made to fail its first check; (part, outcomes)."""
    here = {c.name for c in s.assignment_of(composite).components}
    parts = [p for p in composite.depends if p in here]
    if not parts:
        return "", outcomes
    part = s.component(data.draw(st.sampled_from(parts)))
    return part.name, {**outcomes, part.checks[0].id: data.draw(s.failures)}


def failing_check(composite, data) -> tuple[str, str, dict]:
    """A part of `composite` failing its own first check and a graded check of the composite failing:
    (part, check, its assignment's outcomes); ("", "", ...) where it has no part of its own assignment."""
    part, outcomes = failing_part(composite, data, s.all_passed(s.assignment_of(composite)))
    if not part:
        return "", "", outcomes
    check = data.draw(st.sampled_from(graded_checks(composite, outcomes)))
    outcomes[check] = data.draw(s.failures)
    return part, check, outcomes


def graded_checks(composite, outcomes) -> list[str]:
    return [chk.id for chk in composite.checks if chk.id not in composite.isolated and chk.id in outcomes]


@s.KIT
@given(s.assignments, st.booleans())
def test_nothing_failing_runs_nothing_again_and_blames_nothing(assignment, swap):
    runs = Runs()
    assert attribute(s.COURSE, assignment, s.all_passed(assignment), runs, swap) == {}
    assert all(checks == {} for checks, _, _ in runs.asked)


@s.KIT
@given(s.composites, st.data())
def test_with_the_reference_every_graded_check_of_a_composite_runs_again_on_its_failing_parts(composite, data):
    assignment = s.assignment_of(composite)
    part, check, outcomes = failing_check(composite, data)
    if not part:
        return
    answer = data.draw(s.ran)
    runs = Runs({check: answer})
    blame = attribute(s.COURSE, assignment, outcomes, runs, swap=True)
    assert set(graded_checks(composite, outcomes)) <= set(blame)
    assert part in blame[check].parts and blame[check].on_reference == answer
    swapped = runs.asked[-1][0]
    assert target(s.component(part)) in swapped[check]
    owner = {chk.id: c for c in assignment.components for chk in c.checks}
    # a part passing its own checks is looked through to its failing parts (ba19d2d): blame reaches
    # the composite's parts and theirs, never outside what it is built on
    assert all(set(b.parts) <= below(owner[c].name) for c, b in blame.items())


@s.KIT
@given(s.composites, st.data(), st.booleans())
def test_an_excuse_holds_only_where_the_control_run_fails_as_the_check_did(composite, data, same):
    """A check that the reference's parts pass, where the fed run cannot be had, is run again on the
    composite's own parts reached as stand-ins are (Reach.ECHOED): failing there as it did, it is excused;
    otherwise it is told, and its own outcome counts."""
    assignment = s.assignment_of(composite)
    part, check, outcomes = failing_check(composite, data)
    if not part:
        return
    control = outcomes[check] if same else data.draw(s.ran.filter(lambda o: o != outcomes[check]))
    runs = Runs(own={check: control})
    blame = attribute(s.COURSE, assignment, outcomes, runs, swap=True)
    assert blame[check].on_reference == s.PASSED
    assert any(check in checks and reach == Reach.ECHOED for checks, reach in runs.controls)
    steady = control.reason not in ("timeout", "crash", "grader")
    assert blame[check].told == (None if same or not steady else outcomes[check]), (control, blame[check])


@s.KIT
@given(s.composites, st.data(), st.booleans())
def test_an_excuse_holds_only_where_the_reference_composite_fed_the_parts_fails_as_the_check_did(composite, data,
                                                                                               same):
    """A check that the reference's parts pass runs on the reference's composite fed the submission's parts
    (Reach.FED): failing there as it did, it is excused; passing there, or failing otherwise, the failure
    is not the parts' doing and counts (UNEXPLAINED). The control run is not needed then."""
    assignment = s.assignment_of(composite)
    part, check, outcomes = failing_check(composite, data)
    if not part:
        return
    own = outcomes[check]
    if own.reason in (Reason.CRASH, Reason.TIMEOUT):  # a fed run that crashes too is no evidence
        return
    fed = own if same else data.draw(st.one_of(st.just(s.PASSED), st.builds(
        Outcome, status=st.just(Status.FAILED), reason=st.just(Reason.MISMATCH), message=s.words)).filter(
        lambda o: o.status == Status.PASSED or own.status != Status.ERROR and o.message != own.message))
    runs = Runs(fed={check: fed})
    blame = attribute(s.COURSE, assignment, outcomes, runs, swap=True)[check]
    assert any(check in checks and reach == Reach.FED for checks, reach in runs.controls)
    assert not any(check in checks and reach == Reach.ECHOED for checks, reach in runs.controls)
    assert (blame.told, blame.why) == ((None, Attributed.TOLD) if same else (own, Attributed.UNEXPLAINED)), (
        own, fed, blame)


def _mismatch(message: str, error: float | None) -> Outcome:
    return Outcome(Status.FAILED, Reason.MISMATCH, message, Details(max_abs_error=error))


def test_the_fed_run_explains_a_failure_alike_but_for_counts_and_float_noise():
    own = _mismatch("output differs from the expected values at 5 of 8 elements", 0.5)
    assert _explains(own, _mismatch("output differs from the expected values at 6 of 8 elements", 0.5000001))
    assert _explains(own, own) and _explains(s.PASSED, s.PASSED)
    assert not _explains(own, _mismatch("output differs from the expected values at 5 of 8 elements", 0.4))
    assert not _explains(own, _mismatch("the padding row is not zero", 0.5))
    assert not _explains(own, _mismatch("output differs from the expected values at 5 of 8 elements", None))
    assert not _explains(own, s.PASSED) and not _explains(s.PASSED, own)
    raised = [Outcome(Status.ERROR, Reason.EXCEPTION, f"your code raised {e}") for e in ("KeyError: 3", "TypeError")]
    assert _explains(*raised)  # the reference's composite raised on the parts' outputs, as the own composite did
    part = "assignment3/sublayer.py:40 in forward: return x + sublayer(x)"

    def raising(*where: str) -> Outcome:
        return Outcome(Status.ERROR, Reason.EXCEPTION, "your code raised TypeError", Details(where="\n".join(where)))

    assert _explains(raising("assignment3/encoder.py:60 in forward: x = self.residuals[0](x, f)", part), raising(part))
    # the part raised in the fed run alone, where the composite's own run raised in the composite
    assert not _explains(raising("assignment3/encoder.py:61 in forward: raise TypeError"), raising(part))
    for none in (UNSUPPORTED, Outcome(Status.TIMEOUT, Reason.TIMEOUT, "took too long"), None):
        assert _explains(own, none) is None


def below(name: str) -> frozenset[str]:
    """Every part `name` is built on, directly or not."""
    from grader.suite.plugin import _below

    return _below(name, {c.name: c.depends for a in s.COURSE.assignments.values() for c in a.components})


@s.KIT
@given(s.composites, st.data())
def test_without_the_reference_only_failing_checks_are_blamed_and_none_runs_again_here(composite, data):
    assignment = s.assignment_of(composite)
    part, check, outcomes = failing_check(composite, data)
    if not part:
        return
    runs = Runs()
    blame = attribute(s.COURSE, assignment, outcomes, runs, swap=False)
    assert check in blame and blame[check].on_reference is None and part in blame[check].parts
    assert all(outcomes[c].status != "passed" for c in blame)
    assert all(all(parts == () for parts in asked.values()) for asked, _, _ in runs.asked)


@s.KIT
@given(s.composites, st.data())
def test_a_check_the_run_on_the_reference_parts_leaves_out_is_blamed_as_missing(composite, data):
    assignment = s.assignment_of(composite)
    part, check, outcomes = failing_check(composite, data)
    if not part:
        return
    blame = attribute(s.COURSE, assignment, outcomes, Runs(omit=frozenset({check})), swap=True)
    assert blame[check].on_reference == MISSING


@s.KIT
@given(st.sampled_from([c for c in s.COMPOSITES if any(
    p not in {x.name for x in s.assignment_of(c).components} for p in c.depends)]), st.data())
def test_a_failing_part_of_an_earlier_assignment_is_found_by_running_its_own_checks_and_listed_upstream(
        composite, data):
    assignment = s.assignment_of(composite)
    here = {c.name for c in assignment.components}
    outside = s.component(data.draw(st.sampled_from([p for p in composite.depends if p not in here])))
    outcomes = s.all_passed(assignment)
    check = graded_checks(composite, outcomes)[0]
    outcomes[check] = data.draw(s.failures)
    broken = outside.checks[0].id
    runs, upstream = Runs({broken: data.draw(s.failures)}), []
    blame = attribute(s.COURSE, assignment, outcomes, runs, swap=True, upstream=upstream)
    first, quick, one_failure = runs.asked[0]
    assert broken in first and one_failure and broken in quick
    assert outside.name in upstream and outside.name in blame[check].parts
    order = [c.name for a in s.ASSIGNMENTS for c in a.components]
    assert upstream == sorted(upstream, key=order.index)


def test_a_target_is_the_contract_name_a_stand_in_replaces():
    assert target(s.component("LayerNorm")) == "assignment1.layer_norm:LayerNorm"
    assert target(s.component("make_tgt_mask")) == "assignment2.masks:make_tgt_mask"
