"""Diagnosis (grader.judging.diagnosis) and telling (grader.judging.telling) on hand-made outcomes: a component is
named a bug of the table only where exactly that one bug explains all its failing public checks, and
its most telling failure is chosen from what the report charges."""

from hypothesis import assume, given
from hypothesis import strategies as st

from grader.judging import diagnosis, telling
from grader.results import CheckResult, ComponentResult, Outcome
from tests.kit import strategies as s

mismatches = st.builds(Outcome, status=st.just("failed"), reason=st.just("mismatch"), message=s.words,
                       details=st.fixed_dictionaries({"expected": st.floats(-9, 9).map(lambda x: f"{x:.6f}"),
                                                      "got": st.floats(-9, 9).map(lambda x: f"{x:.6f}")}))


@st.composite
def one_component_failing(draw):
    """(assignment, component, outcomes): every check passed but some public checks of one component."""
    comp = draw(st.sampled_from([c for c in s.COMPONENTS if sum(chk.tier == "public" for chk in c.checks) > 1]))
    assignment = s.assignment_of(comp)
    public = [chk.id for chk in comp.checks if chk.tier == "public"]
    failing = draw(st.lists(st.sampled_from(public), min_size=1, unique=True))
    return assignment, comp, {**s.all_passed(assignment), **{c: draw(mismatches) for c in failing}}


def entry(assignment, comp, outcomes, name="bug_x") -> dict[str, dict]:
    """A table entry of a bug whose failing public checks say exactly what `outcomes` say."""
    return {name: {"component": comp.name, "failing": diagnosis.failing_public(assignment, comp.name, outcomes),
                   "message": f"{name} in {comp.name}", "fix": f"do not {name}"}}


@s.KIT
@given(one_component_failing())
def test_the_one_bug_that_explains_every_failing_public_check_is_named_on_its_component_alone(case):
    assignment, comp, outcomes = case
    table = {**entry(assignment, comp, outcomes)}
    found = diagnosis.diagnose(s.COURSE, assignment, outcomes, table=table)
    assert set(found) == {comp.name} and found[comp.name]["bug"] == "bug_x"
    assert found[comp.name]["fix"] == "do not bug_x"


@s.KIT
@given(one_component_failing())
def test_two_bugs_that_both_explain_the_failures_name_neither(case):
    assignment, comp, outcomes = case
    table = {**entry(assignment, comp, outcomes, "bug_x"), **entry(assignment, comp, outcomes, "bug_y")}
    assert comp.name not in diagnosis.diagnose(s.COURSE, assignment, outcomes, table=table)


@s.KIT
@given(one_component_failing(), st.data())
def test_a_bug_that_explains_only_some_of_the_failures_is_not_named(case, data):
    assignment, comp, outcomes = case
    table = entry(assignment, comp, outcomes)
    passing = [chk.id for chk in comp.checks if chk.tier == "public" and outcomes[chk.id].status == "passed"]
    assume(passing)
    more = {**outcomes, data.draw(st.sampled_from(passing)): data.draw(mismatches)}
    found = diagnosis.diagnose(s.COURSE, assignment, more, table=table)
    assert found.get(comp.name, {}).get("bug") != "bug_x"


@s.KIT
@given(one_component_failing())
def test_a_component_whose_failures_pass_with_the_reference_parts_is_not_named(case):
    assignment, comp, outcomes = case
    excused = frozenset(c for c, o in outcomes.items() if o.status != "passed")
    found = diagnosis.diagnose(s.COURSE, assignment, outcomes, excused=excused,
                               table=entry(assignment, comp, outcomes))
    assert comp.name not in found


@s.KIT
@given(st.floats(-1e3, 1e3).filter(lambda x: abs(x) > 1e-2), st.integers(6, 9))
def test_a_signature_is_the_same_for_numbers_equal_to_4_significant_digits_and_differs_otherwise(x, digits):
    near, far = x * (1 + 2e-5), x * 1.01 + 0.5
    assume(f"{x:.4g}" == f"{near:.4g}" and f"{x:.{digits}f}" != f"{near:.{digits}f}" and f"{x:.4g}" != f"{far:.4g}")

    def said(value: float) -> Outcome:
        return Outcome("failed", "mismatch", f"got {value:.{digits}f}", {"got": f"{value:.{digits}f}"})

    assert diagnosis.signature(said(x)) == diagnosis.signature(said(near))
    assert diagnosis.signature(said(x)) != diagnosis.signature(said(far))


def _component(outcomes: list[Outcome]) -> ComponentResult:
    checks = [CheckResult(f"c{i}", "public", 1.0, o) for i, o in enumerate(outcomes)]
    return ComponentResult("LayerNorm", "assignment1/layer_norm.py", 0.0, 10.0, checks, ())


@s.KIT
@given(st.lists(st.one_of(s.ran, s.not_counted), min_size=1, max_size=6))
def test_what_the_report_charges_is_every_failure_not_excused_not_waiting_and_counted(outcomes):
    comp = _component(outcomes)
    comp.checks[0].excused_by = ("MultiHeadAttention",)
    shown = telling.shown(comp)
    assert comp.checks[0] not in shown
    assert [t.id for t in shown] == [t.id for t in comp.checks[1:] if t.outcome.status != "passed"
                                     and t.outcome.reason not in ("unavailable", "no_cuda")]
    telling_check = telling.most_telling(comp, {})
    assert (telling_check is None) == (not shown) and (telling_check is None or telling_check in shown)


def test_a_wrong_value_tells_more_than_an_exception_and_a_hint_naming_the_bug_more_than_one_that_does_not():
    crash = Outcome("error", "exception", "boom")
    plain = Outcome("failed", "mismatch", "differs", {"hint": "the rows are not normalised"})
    named = Outcome("failed", "mismatch", "differs", {"hint": "looks like the variance is unbiased: divides by n - 1"})
    table = {"var_unbiased": {"component": "LayerNorm", "message": "the variance is unbiased (divides by n - 1)",
                              "fix": "unbiased=False", "failing": {"c1": {}, "c2": {}}}}
    assert telling.most_telling(_component([crash, plain]), table).id == "c1"
    assert telling.most_telling(_component([crash, plain, named]), table).id == "c2"


def test_a_diagnosis_is_completed_with_the_tables_words_and_the_checks_it_explains():
    table = {"var_unbiased": {"component": "LayerNorm", "message": "unbiased variance", "fix": "unbiased=False",
                              "failing": {"b": {}, "a": {}}}}
    done = telling.completed({"bug": "var_unbiased", "message": "m"}, table)
    assert done == {"bug": "var_unbiased", "message": "m", "what": "unbiased variance", "fix": "unbiased=False",
                    "explains": ["a", "b"]}
    assert telling.completed({"bug": "looks_like:c3", "message": "m"}, table)["explains"] == ["c3"]
    assert telling.completed(None, table) is None


def test_word_pairs_are_lower_case_split_at_punctuation_and_skip_pairs_of_small_words():
    assert telling.pairs("view(B, h") == {("view", "b"), ("b", "h")}
    assert telling.pairs("of the Heads") == {("the", "heads")}
