"""Numerical forensics (grader.suite.forensics): what a wrong tensor looks like next to the expected
one, as properties over drawn tensors. Each rule names what was done to the expected values; values
that are not a simple function of them (an independent draw, a bug mixing positions) get no phrase,
since a wrong "looks like" is worse than none. Pure tensor code: no grading, a few seconds."""

import math

import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from grader.suite.forensics import dtype, looks_like, shape
from tests import strategies as s

shapes = st.lists(st.integers(3, 6), min_size=2, max_size=4).map(tuple)
seeds = st.integers(0, 2**16)


def weights(shape, seed):
    return s.tensor(list(shape), seed).softmax(-1)


@settings(max_examples=25)
@given(shape=shapes, seed=seeds, which=st.sampled_from(["sqrt", "inv_sqrt", "n", "inv_n"]))
def test_a_constant_factor_is_named_as_a_function_of_a_size(shape, seed, which):
    e = s.tensor(list(shape), seed)
    n = shape[-1]
    c, name = {"sqrt": (math.sqrt(n), f"sqrt({n})"), "inv_sqrt": (1 / math.sqrt(n), f"1/sqrt({n})"),
               "n": (n, f"{n}"), "inv_n": (1 / n, f"1/{n}")}[which]
    said = looks_like(e * c, e)
    assert said.startswith("the expected values times ") and said.split("times ")[1] in {
        name, *(f"{v}" for v in shape), *(f"sqrt({v})" for v in shape), *(f"1/sqrt({v})" for v in shape),
        *(f"1/{v}" for v in shape)}, said
    assert math.isclose(eval(said.split("times ")[1].replace("sqrt", "math.sqrt")), c, rel_tol=1e-6)  # noqa: S307


@settings(max_examples=25)
@given(shape=shapes, seed=seeds)
def test_a_sign_flip_is_named(shape, seed):
    e = s.tensor(list(shape), seed)
    assert looks_like(-e, e) == "the expected values with their sign flipped"


@settings(max_examples=25)
@given(n=st.integers(3, 6), lead=st.integers(1, 3), seed=seeds)
def test_a_transpose_of_the_last_two_axes_is_named(n, lead, seed):
    e = s.tensor([lead, n, n], seed)
    assert looks_like(e.transpose(-2, -1), e) == "the expected values transposed (axes -2 and -1 swapped)"


@settings(max_examples=25)
@given(shape=shapes, seed=seeds, step=st.sampled_from([1, -1]))
def test_a_shift_by_one_position_is_named(shape, seed, step):
    e = s.tensor(list(shape), seed)
    g = e.roll(step, dims=-2)
    said = looks_like(g, e)
    assert said == f"the expected values shifted one position {'later' if step == 1 else 'earlier'} along axis -2"


@settings(max_examples=25)
@given(shape=shapes, seed=seeds, rows=st.integers(1, 2))
def test_nan_on_whole_rows_only_is_named(shape, seed, rows):
    e = s.tensor(list(shape), seed)
    g = e.clone()
    g.view(-1, shape[-1])[:rows] = float("nan")
    assert looks_like(g, e).startswith("NaN or inf only on whole rows")


@settings(max_examples=25)
@given(shape=shapes, seed=seeds)
def test_weights_normalised_over_the_wrong_axis_are_named(shape, seed):
    e = weights(shape, seed)
    g = s.tensor(list(shape), seed).softmax(-2)
    assert looks_like(g, e).startswith("rows that do not sum to one, but columns that do")


@settings(max_examples=25)
@given(shape=shapes, seed=seeds)
def test_wrong_only_where_the_expected_is_zero_is_named(shape, seed):
    e = weights(shape, seed)
    e[..., 0] = 0.0  # a blocked key
    g = e.clone()
    g[..., 0] = 0.25
    assert looks_like(g, e).startswith("right where the expected value is nonzero and wrong only where it is 0")


@settings(max_examples=50)
@given(shape=shapes, seed=seeds, other=seeds)
def test_values_that_are_no_simple_function_of_the_expected_get_no_phrase(shape, seed, other):
    e, g = s.tensor(list(shape), seed), s.tensor(list(shape), other + 2**17)
    assert looks_like(g, e) == ""
    assert looks_like(e + 0.01 * g, e) == ""  # near the expected, but not any rule: no guess
    assert looks_like(e, e) == ""  # nothing wrong, nothing said


@given(n=st.integers(3, 8))
def test_a_causal_mask_inverted_transposed_or_shifted_is_named(n):
    want = torch.ones(n, n, dtype=torch.bool).tril()[None, None]
    assert looks_like(~want, want).startswith("the expected mask inverted")
    assert looks_like(want.transpose(-2, -1), want) == "the expected values transposed (axes -2 and -1 swapped)"
    assert looks_like(torch.ones(n, n, dtype=torch.bool).tril(-1)[None, None], want) == (
        "the expected values shifted one position later along axis -2")


@given(b=st.integers(1, 3), t=st.integers(2, 7))
def test_a_shape_with_two_axes_swapped_is_named(b, t):
    assert shape((b, 1, t, 1), (b, 1, 1, t)) == "the expected shape with axes -2 and -1 swapped"
    assert shape((b, 2, 1, t), (b, 1, 1, t)) == ""


@given(shape=shapes, seed=seeds)
def test_a_factor_that_names_nothing_or_zero_gets_no_phrase(shape, seed):
    e = s.tensor(list(shape), seed)
    assert looks_like(e * 0.9898, e) == ""  # a masked row's lost mass, say: a coincidence of the example
    assert looks_like(e * 0, e) == ""


@settings(max_examples=25)
@given(shape=shapes, seed=seeds)
def test_log_softmax_where_logits_are_expected_is_named(shape, seed):
    e = s.tensor(list(shape), seed)
    assert looks_like(e.log_softmax(-1), e).startswith("the expected values minus a constant per row")
    shift = s.tensor([*shape[:-1], 1], seed + 1)
    assert looks_like(e + shift, e) == "the expected values plus a different constant in each row (along the last axis)"


@settings(max_examples=25)
@given(b=st.integers(2, 4), t=st.integers(3, 6), d=st.integers(3, 6), seed=seeds)
def test_a_term_the_same_for_every_batch_element_is_named(b, t, d, seed):
    e, table, bias = s.tensor([b, t, d], seed), s.tensor([t, d], seed + 1), s.tensor([d], seed + 2)
    assert looks_like(e + table, e).startswith("the expected values plus a term that is the same for every element")
    assert looks_like(e + bias, e).startswith("the expected values plus a constant per feature")


@settings(max_examples=25)
@given(rows=st.integers(6, 12), d=st.integers(2, 6), seed=seeds)
def test_each_feature_scaled_and_shifted_by_its_own_constants_is_named(rows, d, seed):
    normed, beta = s.tensor([rows, d], seed), s.tensor([d], seed + 2)
    gamma = 0.5 + s.tensor([d], seed + 1).abs()  # a gamma near 0 leaves a feature nearly constant: nothing to fit
    e = gamma * normed + beta
    # each wrong one is got = a * e + b per feature: (1/gamma, -beta/gamma), (beta/gamma, ...) and
    # (1, beta * (gamma - 1)). Where the features' factors are drawn alike (seed 390, d 2: beta/gamma
    # -0.66750 and -0.66752), or the third's shifts (seed 10000: 0.2974 and 0.2972), there is no
    # per-feature story left to tell: the rule is rightly silent
    for per_feature in (1 / gamma, beta / gamma, beta * (gamma - 1)):
        assume(float(per_feature.max() - per_feature.min()) > 1e-2 * float(per_feature.abs().max()))
    for wrong in (normed, beta * normed + gamma, gamma * (normed + beta)):  # no affine, swapped, beta inside
        # (gammas drawn alike leave one factor for all: a shift per feature, or a named factor about it)
        assert "feature" in looks_like(wrong, e)


@given(b=st.integers(1, 3), n=st.integers(3, 7), data=st.data())
def test_a_target_mask_without_its_causal_part_is_named(b, n, data):
    keep = torch.tensor(data.draw(st.lists(st.booleans(), min_size=b * n, max_size=b * n))).view(b, 1, 1, n)
    want = keep & torch.ones(n, n, dtype=torch.bool).tril()
    got = keep.expand(b, 1, n, n)
    assume(not bool((got == want).all()))  # forensics runs on failures only
    # one diagonal too many (only key i + 1 let through) is said as the off-by-one it looks like
    assert looks_like(got, want).startswith(("the expected mask with the future", "the expected values shifted one"))


@given(b=st.integers(2, 4), t=st.integers(2, 7))
def test_a_shape_with_singleton_axes_missing_or_one_for_the_batch_is_named(b, t):
    assert shape((t, t), (1, 1, t, t)).startswith("the expected shape with fewer size-1 axes")
    assert shape((b, 1, t), (b, 1, 1, t)).startswith("the expected shape with fewer size-1 axes")
    assert shape((1, 1, t, t), (b, 1, t, t)).startswith(f"the expected shape with size 1 on the batch axis where {b}")
    assert shape((b, 1, t, 1), (b, 1, t, 2)) == ""  # one size off on another axis: a coincidence of the example
    assert shape((b, t), (b, 1, 1, t + 1)) == ""


@given(n=st.integers(2, 6), kind=st.sampled_from([torch.int64, torch.int32, torch.float32, torch.uint8]))
def test_a_mask_of_zeros_and_ones_is_named(n, kind):
    want = torch.ones(n, n, dtype=torch.bool).tril()
    assert dtype(want.to(kind), want).startswith("the expected mask as 0/1 values")
    assert dtype((~want).to(kind), want) == ""  # other values: not the expected mask


@settings(max_examples=25)
@given(shape=shapes, seed=seeds)
def test_a_different_factor_in_each_row_is_named(shape, seed):
    e = s.tensor(list(shape), seed)
    factor = 0.5 + s.tensor([*shape[:-1], 1], seed + 1).abs()  # one per row, drawn apart
    assume(float(factor.max() - factor.min()) > 1e-2)
    assert looks_like(e * factor, e).startswith("the expected values times a different factor in each row")


# --- placement (grader.judging.diagnosis.placement): a CPU tensor made where the input's device was expected
_COURSE = None


def _component(name: str):
    global _COURSE
    if _COURSE is None:
        from grader import load_course
        from tests.kit.conftest import ROOT

        _COURSE = load_course(ROOT / "course.toml")
    spec = next(a for a in _COURSE.assignments.values() if any(c.name == name for c in a.components))
    return spec, next(c for c in spec.components if c.name == name)


def _frames(spec, comp):
    """Frames a chain may hold: the component's own function or method, another function of its file,
    and a line in another file (a part's: the helper it called)."""
    own = comp.name if comp.name[0].islower() else f"{comp.name}.forward"
    return st.tuples(st.sampled_from([f"{spec.name}/{comp.file}", "assignment1/embedding.py"]),
                     st.integers(1, 400), st.sampled_from([own, "helper", "Other.forward"]),
                     st.sampled_from(["ys = torch.full((B, 1), sos)", "m = torch.ones(T, T).tril()"]))


@settings(max_examples=60)
@given(name=st.sampled_from(["make_tgt_mask", "Transformer", "greedy_decode", "LabelSmoothingLoss"]), data=st.data())
def test_a_placement_failure_is_diagnosed_on_the_components_own_line(name, data):
    from grader.judging.diagnosis import placement
    from grader.results import Details, Outcome
    from tests.grading.helpers.device import chain as made

    spec, comp = _component(name)
    chain = data.draw(st.lists(_frames(spec, comp), min_size=1, max_size=3))
    # the frames as the worker's watch sends them, recorded as data by the device checks (the Mismatch's `made`)
    frames = made([f"{f}:{n} in {fn}: {code}" for f, n, fn, code in chain])
    check = next(c.id for c in comp.checks if c.tier == "public")
    said = placement(spec, comp, {check: Outcome("failed", "mismatch", "mixes devices", Details(made=frames))})
    mine = [f for f in chain if f[0] == f"{spec.name}/{comp.file}"]
    if not mine:
        assert said is None  # made in another file: a part's line, never said on this component
        return
    own = [f for f in mine if f[2] == comp.name or f[2].startswith(f"{comp.name}.")]
    f, n, _, code = (own or mine)[0]
    assert said is not None and said.where == f"{f}:{n}" and said.line == code, (chain, said)
    assert said.bug == f"placement:{check}"


@settings(max_examples=30)
@given(name=st.sampled_from(["make_tgt_mask", "Transformer", "greedy_decode"]),
       details=st.sampled_from([{"where": "largest error at index [0, 1]"}, {},
                                {"where": "made at assignment3/transformer.py:89 in forward: x"},
                                {"made": []}, {"made": "assignment3/transformer.py:89 in forward: x"},
                                {"made": [{"file": "assignment3/transformer.py", "line": "89", "function": "f",
                                           "code": "x"}]}]))
def test_a_failure_that_is_not_a_placement_failure_gets_no_placement_diagnosis(name, details):
    from grader.findings import Frame
    from grader.judging.diagnosis import placement
    from grader.results import Details, Outcome

    spec, comp = _component(name)
    placed = (Frame(f"{spec.name}/{comp.file}", 3, comp.name, "x = torch.zeros(3)"),)
    checks = [c.id for c in comp.checks if c.tier == "public"][:2]
    results = {checks[0]: Outcome("failed", "mismatch", "differs", Details.from_json(details))}
    assert placement(spec, comp, results) is None
    # one placement failure beside a failure of another kind: the placement does not explain everything
    results[checks[1]] = Outcome("failed", "mismatch", "mixes devices", Details(made=placed))
    assert placement(spec, comp, results) is None
