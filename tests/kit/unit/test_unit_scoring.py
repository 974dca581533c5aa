"""Scoring (grader.judging.scoring, grader.results) on hand-made outcomes: points in proportion to the weight
earned, what is left out, what a forbidden API costs, and that a fix never lowers a grade."""

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from grader.findings import Seen, Sighting
from grader.judging.attribution import Blame
from grader.results import NOT_COUNTED, Outcome
from tests.kit import strategies as s


def by_name(report) -> dict:
    return {c.name: c for c in report.components}


def expected_points(component, outcomes: dict[str, Outcome]) -> float:
    counted = [chk for chk in component.checks if outcomes[chk.id].reason not in NOT_COUNTED]
    total = sum(chk.weight for chk in counted)
    earned = sum(chk.weight for chk in counted if outcomes[chk.id].status == "passed")
    return round(component.points * earned / total, 2) if total else 0.0


@s.KIT
@given(s.graded(st.one_of(s.ran, s.not_counted)))
def test_a_components_points_are_its_points_times_the_weight_passed_over_the_weight_counted(graded):
    assignment, outcomes = graded
    report = s.scored(assignment, outcomes)
    for comp in assignment.components:
        got = by_name(report)[comp.name]
        assert got.score == expected_points(comp, outcomes), comp.name
        assert 0 <= got.score <= got.max_score == comp.points
    assert report.score == round(sum(c.score for c in report.components), 2)
    assert report.max_score == assignment.max_score


@s.KIT
@given(s.assignments)
def test_every_check_passed_scores_full_marks(assignment):
    report = s.scored(assignment, s.all_passed(assignment))
    assert report.score == report.max_score == assignment.max_score
    assert all(c.status == "passed" for c in report.components)
    assert report.start_at() is None


@s.KIT
@given(s.graded(s.failures.filter(lambda o: o.reason != "not_attempted")))
def test_every_check_failed_scores_zero_and_the_report_starts_at_the_first_component(graded):
    assignment, outcomes = graded
    report = s.scored(assignment, outcomes)
    assert report.score == 0
    assert all(c.status == "failed" for c in report.components)
    first = assignment.components[0]
    assert report.start_at() == {"name": first.name, "file": f"{assignment.name}/{first.file}"}


@s.KIT
@given(s.graded(), st.data())
def test_a_check_that_could_not_run_here_counts_as_if_it_were_not_listed(graded, data):
    assignment, outcomes = graded
    comp = data.draw(st.sampled_from(assignment.components))
    check = data.draw(st.sampled_from(comp.checks))
    left_out = s.scored(assignment, {**outcomes, check.id: data.draw(s.not_counted)})
    unlisted = s.scored(assignment, outcomes, unavailable={check.id: None})
    assert by_name(left_out)[comp.name].score == by_name(unlisted)[comp.name].score
    assert check.id not in {t.id for t in by_name(unlisted)[comp.name].checks}


@s.KIT
@given(s.graded(), st.data())
def test_passing_one_more_check_never_lowers_any_score(graded, data):
    assignment, outcomes = graded
    failing = [check for check, o in outcomes.items() if o.status != "passed"]
    if not failing:
        return
    fixed = data.draw(st.sampled_from(failing))
    before = by_name(s.scored(assignment, outcomes))
    after = by_name(s.scored(assignment, {**outcomes, fixed: s.PASSED}))
    assert all(after[name].score >= before[name].score for name in before)
    assert sum(c.score for c in after.values()) > sum(c.score for c in before.values())


@s.KIT
@given(s.graded())
def test_a_check_missing_from_the_results_earns_nothing(graded):
    assignment, outcomes = graded
    dropped = next(iter(outcomes))
    report = s.scored(assignment, {k: v for k, v in outcomes.items() if k != dropped})
    check = next(t for c in report.components for t in c.checks if t.id == dropped)
    assert (check.outcome.status, check.outcome.reason) == ("error", "missing")
    assert not check.earned


@s.KIT
@given(s.graded(), st.data())
def test_a_forbidden_api_scores_its_component_zero_and_keeps_its_checks_outcomes(graded, data):
    assignment, outcomes = graded
    comp = data.draw(st.sampled_from(assignment.components))
    hit = Sighting("torch.nn.LayerNorm", f"{assignment.name}/{comp.file}:3", Seen.SOURCE)
    report = by_name(s.scored(assignment, outcomes, forbidden={comp.name: ([hit], [])}))
    clean = by_name(s.scored(assignment, outcomes))
    assert report[comp.name].score == 0 and report[comp.name].status == "failed"
    assert report[comp.name].forbidden == [hit]
    assert [t.outcome for t in report[comp.name].checks] == [t.outcome for t in clean[comp.name].checks]
    assert all(report[n].score == clean[n].score for n in report if n != comp.name)


@s.KIT
@given(s.graded(), st.data())
def test_a_flag_holds_its_components_points_at_zero_for_review_where_the_course_holds_flags(graded, data):
    """`[policy] flagged = "hold"`: a flagged component scores 0 and keeps what its checks earned in
    `held` (an override releases it); "count": the flag costs nothing. Its checks keep their outcomes."""
    from pathlib import Path

    from grader.judging.scoring import Judged, score

    assignment, outcomes = graded
    comp = data.draw(st.sampled_from(assignment.components))
    flag = Sighting("operator.attrgetter", f"{assignment.name}/{comp.file}:3", Seen.SOURCE)
    clean = by_name(s.scored(assignment, outcomes))

    def judged(hold: bool) -> dict:
        return by_name(score(s.COURSE, assignment, Path("submission"),
                             Judged(outcomes, forbidden={comp.name: ([], [flag])}, hold=hold), 1.0))

    held, counted = judged(True), judged(False)
    assert held[comp.name].score == 0 and held[comp.name].held == clean[comp.name].score
    assert held[comp.name].status == "held for review" and held[comp.name].provisional == 0
    assert by_name(score(s.COURSE, assignment, Path("submission"),  # the default: a flag is a score
                         Judged(outcomes, forbidden={comp.name: ([], [flag])}), 1.0))[comp.name].score == 0
    assert counted[comp.name].score == clean[comp.name].score and counted[comp.name].held is None
    assert [t.outcome for t in held[comp.name].checks] == [t.outcome for t in clean[comp.name].checks]
    assert all(held[n].score == clean[n].score and held[n].held is None for n in held if n != comp.name)


def _one_check_of(composite, outcome: Outcome, blame: Blame):
    """The composite's assignment, every check passed but the composite's first graded check, which says
    `outcome` and is blamed on `blame`'s parts; the composite's result."""
    assignment = s.assignment_of(composite)
    check = next(chk.id for chk in composite.checks if chk.id not in composite.isolated)
    report = s.scored(assignment, {**s.all_passed(assignment), check: outcome}, blame={check: blame})
    return by_name(report)[composite.name], check


@s.KIT
@given(s.composites, s.failures)
def test_a_failure_that_passes_with_the_reference_parts_is_excused_with_full_marks(composite, failure):
    parts = composite.depends[:1]
    result, check = _one_check_of(composite, failure, Blame(parts, s.PASSED))
    assert result.score == result.max_score and result.status == "excused"
    assert next(t for t in result.checks if t.id == check).excused_by == parts


@s.KIT
@given(s.composites, s.failures)
def test_a_pass_that_fails_with_the_reference_parts_is_charged_with_that_failure(composite, failure):
    result, check = _one_check_of(composite, s.PASSED, Blame(composite.depends[:1], failure))
    assert result.score < result.max_score
    assert next(t for t in result.checks if t.id == check).outcome == failure


@s.KIT
@given(s.composites, s.failures.filter(lambda o: o.reason != "not_attempted"))
def test_without_the_reference_a_failure_waits_on_its_parts_and_counts_for_now(composite, failure):
    parts = composite.depends[:1]
    result, check = _one_check_of(composite, failure, Blame(parts, None))
    assert result.status == "waiting" and result.waiting_on == parts
    assert result.score == result.max_score and result.provisional > 0
    assert next(t for t in result.checks if t.id == check).waiting_on == parts


@s.KIT
@given(s.composites, s.failures)
def test_a_failure_that_fails_with_the_reference_parts_too_is_the_composites_own(composite, failure):
    result, check = _one_check_of(composite, failure, Blame(composite.depends[:1], replace(failure)))
    assert result.score < result.max_score and result.status == "partial"
    assert not next(t for t in result.checks if t.id == check).excused_by


@s.KIT
@given(s.graded(st.one_of(s.ran, s.not_counted)))
def test_the_json_report_carries_every_check_with_its_status_and_reason_and_the_same_scores(graded):
    from grader.results import to_json

    assignment, outcomes = graded
    report = s.scored(assignment, outcomes)
    data = to_json(report)
    assert (data["score"], data["max_score"]) == (report.score, report.max_score)
    got = {t["id"]: (t["status"], t["reason"]) for c in data["components"] for t in c["tests"]}
    assert got == {check: (o.status, o.reason) for check, o in outcomes.items()}
    assert [(c["name"], c["score"], c["status"]) for c in data["components"]] == [
        (c.name, c.score, c.status) for c in report.components]
