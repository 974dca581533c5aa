"""Assignment 1, hidden tier: the live reference, on inputs drawn with the course's own seed."""

import torch
from hypothesis import given

from grader.suite.checks import describe
from tests import strategies as s
from tests.grading.helpers.compare import assert_close
from tests.grading.helpers.names import LAYER_NORM
from tests.grading.helpers.oracles import pe_formula, pe_tolerance
from tests.grading.support import check_reference, reference_module


# here, not in the helpers: the public tier ships to students, and this is what the stability check trusts
def layer_norm_float64(x, gamma, beta, eps: float = 1e-5) -> torch.Tensor:
    """The two-pass formula in float64: exact to ~1e-15 for the float32 inputs the checks use."""
    x = x.double()
    centred = x - x.mean(-1, keepdim=True)
    var = (centred * centred).mean(-1, keepdim=True)
    return centred / torch.sqrt(var + eps) * gamma.double() + beta.double()


@given(a=s.activations(), eps=s.eps)
def test_layer_norm_matches_reference(student, reference, a, eps):
    check_reference(student, reference, LAYER_NORM, (a.d_model,), {"x": a.x},
                    {"eps": eps}, seed=a.seed, atol=1e-4)


@given(a=s.far_from_zero())
def test_layer_norm_is_stable_for_large_offsets(student, a):
    # Rows near 1e4 with a spread of about 1, held exactly in float32, against the exact (float64) answer.
    # A sound float32 formula (two-pass x - mean, torch.var, F.layer_norm) is off by a few float32 steps of
    # the offset, relative to the spread: at most ~3 * 2^-24 * |mean| / std * |gamma|; the tolerance is 16
    # of those. E[x^2] - E[x]^2 cancels 1e8-sized numbers and misses by a factor of 1e4 or more (or NaN).
    d = a.d_model
    gamma, beta = s.tensor([d], a.seed + 1, 0.5, 1.0), s.tensor([d], a.seed + 2, 0.5)
    m = student.new(LAYER_NORM, d).load({"gamma": gamma, "beta": beta}, "LayerNorm")
    x = a.x.double()
    conditioning = x.mean(-1, keepdim=True).abs() / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    atol = 1e-5 + 16 * 2.0 ** -24 * conditioning * gamma.double().abs()  # (B, T, d)
    assert_close(m(a.x), layer_norm_float64(a.x, gamma, beta).float(), name="LayerNorm output far from 0",
                 example=describe(x=a.x, gamma=gamma, beta=beta), atol=atol, rtol=0,
                 hint="Rows with a large mean and a small spread are normalised inaccurately. Likely causes: the "
                      "variance computed as E[x^2] - E[x]^2, which cancels two large numbers in float32; "
                      "subtracting the mean before squaring, ((x - mean)^2).mean(), does not.")


@given(a=s.sequences(), d_ff=s.d_ff)
def test_feed_forward_matches_reference(student, reference, a, d_ff):
    check_reference(student, reference, "assignment1.feed_forward:PositionwiseFeedForward", (a.d_model, d_ff),
                    {"x": a.x}, seed=a.seed)


@given(a=s.sequences(d=s.odd_or_even_d_model))
def test_positional_encoding_matches_reference(student, reference, a):
    # the module as the student builds it: its only state is the pe table, and loading the reference's
    # (check_reference) would replace the very thing checked: the check could not fail (grade adequacy)
    target = "assignment1.positional_encoding:PositionalEncoding"
    with torch.no_grad():
        expected = reference_module(reference, target, a.d_model, seed=a.seed, max_len=64)(a.x)
    got = student.new(target, a.d_model, max_len=64).eval()(a.x)
    # each table within the contract's allowance of the formula (row by row): two allowances apart at most
    assert_close(got, expected, name="PositionalEncoding output", example=describe(x=a.x, max_len=64),
                 atol=2 * pe_tolerance(a.x.shape[1], a.d_model))


def test_positional_encoding_default_max_len_is_5000(student):
    pe = student.new("assignment1.positional_encoding:PositionalEncoding", 4).attr("pe")
    assert_close(pe.double() if isinstance(pe, torch.Tensor) else pe, pe_formula(5000, 4),
                 name="pe with the default max_len", atol=pe_tolerance(5000, 4), rtol=0,
                 example=describe(d_model=4), hint="max_len defaults to 5000.")


@given(batch=s.token_batches(), d=s.d_model, seed=s.seeds)
def test_token_embedding_matches_reference(student, reference, batch, d, seed):
    vocab, x = batch
    check_reference(student, reference, "assignment1.embedding:TokenEmbedding", (vocab, d), {"x": x},
                    {"padding_idx": 0}, seed=seed)


@given(batch=s.token_batches(), d=s.d_model, seed=s.seeds)
def test_transformer_embedding_matches_reference(student, reference, batch, d, seed):
    vocab, x = batch
    check_reference(student, reference, "assignment1.embedding:TransformerEmbedding", (vocab, d), {"x": x},
                    {"max_len": 16, "dropout": 0.0, "padding_idx": 0}, seed=seed, atol=1e-4)


@given(batch=s.token_batches(), d=s.d_model, seed=s.seeds)
def test_transformer_embedding_matches_reference_with_reference_parts(student, reference, batch, d, seed):
    vocab, x = batch
    student.swap("assignment1.embedding:TokenEmbedding", "assignment1.positional_encoding:PositionalEncoding")
    check_reference(student, reference, "assignment1.embedding:TransformerEmbedding", (vocab, d), {"x": x},
                    {"max_len": 16, "dropout": 0.0, "padding_idx": 0}, seed=seed, atol=1e-4,
                    hint="Graded on the reference's TokenEmbedding and PositionalEncoding: check the wiring, "
                         "position(token(x)).")
