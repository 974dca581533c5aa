"""Numerical forensics (grader.suite.forensics): what a wrong tensor looks like next to the expected
one, as properties over drawn tensors. Each rule names what was done to the expected values; values
that are not a simple function of them (an independent draw, a bug mixing positions) get no phrase,
since a wrong "looks like" is worse than none. Pure tensor code: no grading, a few seconds."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.suite.forensics import looks_like, shape
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
    assert shape((b, 1, t), (b, 1, 1, t)) == "" and shape((b, 2, 1, t), (b, 1, 1, t)) == ""


@given(shape=shapes, seed=seeds)
def test_a_factor_that_names_nothing_or_zero_gets_no_phrase(shape, seed):
    e = s.tensor(list(shape), seed)
    assert looks_like(e * 0.9898, e) == ""  # a masked row's lost mass, say: a coincidence of the example
    assert looks_like(e * 0, e) == ""
