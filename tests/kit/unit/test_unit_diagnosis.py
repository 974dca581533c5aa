"""Diagnosis (grader.judging.diagnosis) and telling (grader.judging.telling) on hand-made outcomes: a component is
named a bug of the table only where exactly that one bug explains all its failing public checks, and
its most telling failure is chosen from what the report charges."""

from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grader import words
from grader.findings import Diagnosis, Found, Frame, Parameters
from grader.judging import diagnosis, telling
from grader.results import CheckResult, ComponentResult, Details, Drawn, Outcome
from tests.kit import strategies as s


def entry(assignment, comp, outcomes, name="bug_x") -> dict[str, dict]:
    """A table entry of a bug whose failing public checks say exactly what `outcomes` say."""
    return {name: {"component": comp.name, "failing": diagnosis.failing_public(assignment, comp.name, outcomes),
                   "message": f"{name} in {comp.name}", "fix": f"do not {name}"}}


@s.KIT
@given(s.one_component_failing())
def test_the_one_bug_that_explains_every_failing_public_check_is_named_on_its_component_alone(case):
    assignment, comp, outcomes = case
    table = {**entry(assignment, comp, outcomes)}
    found = diagnosis.diagnose(s.COURSE, assignment, outcomes, table=table)
    assert set(found) == {comp.name} and found[comp.name].bug == "bug_x"
    assert found[comp.name].fix == "do not bug_x"


@s.KIT
@given(s.one_component_failing(), st.data())
def test_a_failure_on_the_instructors_second_set_of_draws_alone_leaves_the_bug_named(case, data):
    """The table is of the student's own draws; the instructor's grade runs a passing public check again
    on draws the release does not ship (grader.suite.draws): a failure there alone changes no diagnosis."""
    assignment, comp, outcomes = case
    table = entry(assignment, comp, outcomes)
    passing = [chk.id for chk in comp.checks if chk.tier == "public" and outcomes[chk.id].status == "passed"]
    assume(passing)
    afresh = data.draw(s.mismatches)
    afresh.details = replace(afresh.details, drawn=Drawn.AFRESH)
    more = {**outcomes, data.draw(st.sampled_from(passing)): afresh}
    assert diagnosis.diagnose(s.COURSE, assignment, more, table=table)[comp.name].bug == "bug_x"
    alone = {**s.all_passed(assignment), data.draw(st.sampled_from(passing)): afresh}
    assert comp.name not in diagnosis.diagnose(s.COURSE, assignment, alone, table=table)


@s.KIT
@given(s.one_component_failing())
def test_two_bugs_that_both_explain_the_failures_name_neither(case):
    assignment, comp, outcomes = case
    table = {**entry(assignment, comp, outcomes, "bug_x"), **entry(assignment, comp, outcomes, "bug_y")}
    assert comp.name not in diagnosis.diagnose(s.COURSE, assignment, outcomes, table=table)


@s.KIT
@given(s.one_component_failing(), st.data())
def test_a_bug_that_explains_only_some_of_the_failures_is_not_named(case, data):
    assignment, comp, outcomes = case
    table = entry(assignment, comp, outcomes)
    passing = [chk.id for chk in comp.checks if chk.tier == "public" and outcomes[chk.id].status == "passed"]
    assume(passing)
    more = {**outcomes, data.draw(st.sampled_from(passing)): data.draw(s.mismatches)}
    found = diagnosis.diagnose(s.COURSE, assignment, more, table=table)
    assert comp.name not in found or found[comp.name].bug != "bug_x"


@s.KIT
@given(s.one_component_failing())
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
        return Outcome("failed", "mismatch", f"got {value:.{digits}f}", Details(got=f"{value:.{digits}f}"))

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
    plain = Outcome("failed", "mismatch", "differs", Details(hint="the rows are not normalised"))
    named = Outcome("failed", "mismatch", "differs",
                    Details(hint="looks like the variance is unbiased: divides by n - 1"))
    table = {"var_unbiased": {"component": "LayerNorm", "message": "the variance is unbiased (divides by n - 1)",
                              "fix": "unbiased=False", "failing": {"c1": {}, "c2": {}}}}
    assert telling.most_telling(_component([crash, plain]), table).id == "c1"
    assert telling.most_telling(_component([crash, plain, named]), table).id == "c2"


def test_a_diagnosis_is_completed_with_the_tables_words_and_the_checks_it_explains():
    table = {"var_unbiased": {"component": "LayerNorm", "message": "unbiased variance", "fix": "unbiased=False",
                              "failing": {"b": {}, "a": {}}}}
    done = telling.completed(Diagnosis(Found.TABLE, "var_unbiased"), table)
    assert done == Diagnosis(Found.TABLE, "var_unbiased", what="unbiased variance", fix="unbiased=False",
                             explains=("a", "b"))
    # what it has already stays: the table's words are for a diagnosis without them
    assert telling.completed(Diagnosis(Found.TABLE, "var_unbiased", what="w", explains=("a",)), table) == Diagnosis(
        Found.TABLE, "var_unbiased", what="w", fix="unbiased=False", explains=("a",))
    seen = Diagnosis(Found.LOOKS_LIKE, "looks_like:c3", check="c3", subject="rows", looks_like="twice")
    assert telling.completed(seen, table) == Diagnosis(Found.LOOKS_LIKE, "looks_like:c3", check="c3", subject="rows",
                                                       looks_like="twice", explains=("c3",))
    placed = Diagnosis(Found.PLACEMENT, "placement:c3", check="c3", component="C", where="a.py:1", function="f")
    assert telling.completed(placed, table) == placed  # in all its failing checks: none named apart
    assert telling.completed(None, table) is None


def test_word_pairs_are_lower_case_split_at_punctuation_and_skip_pairs_of_small_words():
    assert telling.pairs("view(B, h") == {("view", "b"), ("b", "h")}
    assert telling.pairs("of the Heads") == {("the", "heads")}


# what the forensics read is the checks' data (issue 46: nothing renders English to parse it back) ----------

def _forensic_of(component: str, check: str, outcome: Outcome) -> Diagnosis | None:
    comp = next(c for c in s.COMPONENTS if c.name == component)
    assignment = s.assignment_of(comp)
    return diagnosis.forensic(assignment, component, {**s.all_passed(assignment), check: outcome})


def test_a_looks_like_is_said_of_the_checks_subject_and_a_check_that_names_none_of_its_whole_message():
    said = Outcome("failed", "mismatch", "LayerNorm output differs from the expected values at 3 of 8 elements",
                   Details(looks_like="the expected values times 2", subject="the normalised rows"))
    found = _forensic_of("LayerNorm", "layer_norm_matches_torch", said)
    assert found is not None and words.what(found) == "the normalised rows looks like the expected values times 2"
    unnamed = Outcome("failed", "mismatch", "LayerNorm output differs",
                      Details(looks_like="the expected values times 2"))
    found = _forensic_of("LayerNorm", "layer_norm_matches_torch", unnamed)
    assert found is not None and words.what(found) == "LayerNorm output differs looks like the expected values times 2"


@s.KIT
@given(st.lists(st.sampled_from(["linear1", "linear2", "norm"]), min_size=1, max_size=3, unique=True))
def test_missing_parameters_are_read_from_the_names_checks_data_and_never_from_its_text(layers):
    missing = sorted(f"{n}.bias" for n in layers)
    got = f"missing: {', '.join(missing)}; unexpected: none; wrong shape: none"
    data = Parameters(missing=tuple(missing))
    check = "feed_forward_has_named_layers"
    found = _forensic_of("PositionwiseFeedForward", check,
                         Outcome("failed", "mismatch", "m", Details(got=got, parameters=data)))
    assert found is not None and words.what(found) == (
        f"PositionwiseFeedForward looks like {', '.join(sorted(layers))} built with bias=False: "
        "the docstring asks for a bias")
    # the same words in `got` without the data name nothing; nor does data with an unexpected name
    assert _forensic_of("PositionwiseFeedForward", check, Outcome("failed", "mismatch", "m", Details(got=got))) is None
    other = Parameters(missing=tuple(missing), unexpected=("w",))
    assert _forensic_of("PositionwiseFeedForward", check,
                        Outcome("failed", "mismatch", "m", Details(parameters=other))) is None


def test_layers_missing_but_the_first_look_like_one_module_repeated():
    missing = ["layers.1.attn.w_q.weight", "layers.1.ffn.linear1.bias", "layers.2.norm.weight"]
    said = Outcome("failed", "mismatch", "m",
                   Details(parameters=Parameters(missing=tuple(missing))))
    found = _forensic_of("Encoder", "encoder_has_named_parts", said)
    assert found is not None and "look like one module repeated" in words.what(found)


def test_a_parameter_without_gradient_names_its_module_from_the_checks_data_alone():
    said = Outcome("failed", "mismatch", "the gradient of DecoderLayer's parameter cross_attn.w_k.weight is None",
                   Details(got="no gradient (None)", parameters=Parameters(no_gradient=("cross_attn.w_k.weight",))))
    found = _forensic_of("DecoderLayer", "decoder_layer_gradients_reach_every_parameter", said)
    assert found is not None and (found.names, found.modules) == ("no_gradient", ("cross_attn.w_k",))
    assert words.what(found).startswith("DecoderLayer's cross_attn.w_k gets no gradient: it looks unused in forward")
    # the words alone, or data of another form (two names, a name without its module, other names), name nothing
    for details in ({"got": "no gradient (None)"}, {"parameters": {"no_gradient": ["a.weight", "b.weight"]}},
                    {"parameters": {"no_gradient": ["weight"]}}, {"parameters": {"no_gradient": "w.weight"}},
                    {"parameters": {"no_gradient": ["w.weight"], "missing": ["x.weight"]}}):
        assert _forensic_of("DecoderLayer", "decoder_layer_gradients_reach_every_parameter",
                            Outcome("failed", "mismatch", said.message, Details.from_json(details))) is None, details


@pytest.mark.parametrize("parameters", [
    "missing: linear1.bias", ["linear1.bias"], {"missing": "linear1.bias", "unexpected": [], "wrong_shape": []},
    {"missing": [3], "unexpected": [], "wrong_shape": []}, {"missing": ["linear1.bias"], "other": []},
    {"missing": ["linear1.bias"], "unexpected": None, "wrong_shape": []}])
def test_names_data_of_another_form_names_nothing(parameters):
    """A report's JSON written by hand: names data not of its form is no names data."""
    said = Outcome("failed", "mismatch", "m", Details.from_json({"parameters": parameters}))
    assert _forensic_of("PositionwiseFeedForward", "feed_forward_has_named_layers", said) is None


def test_what_the_forensics_read_of_a_checks_data_is_bounded():
    long = "x" * 100_000
    said = Outcome("failed", "mismatch", "m", Details(looks_like=long, subject=long))
    found = _forensic_of("LayerNorm", "layer_norm_matches_torch", said)
    assert found is not None and len(words.what(found)) <= 2 * diagnosis.MAX_TEXT + len(" looks like ")
    frame = {"file": "assignment3/transformer.py", "line": 7, "function": "Transformer.forward", "code": long}
    chain = diagnosis._chain(Outcome("failed", "mismatch", "m", Details(made=(Frame(**frame),) * 10_000)))
    assert len(chain) == diagnosis.MAX_FRAMES and all(len(f.code) == diagnosis.MAX_TEXT for f in chain)
    names = ["layers.1.w"] * 10_000
    assert len(diagnosis._listed(tuple(names))) == diagnosis.MAX_NAMES
