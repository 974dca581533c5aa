"""Assignment 1, hidden tier: the live reference, on inputs drawn with the course's own seed."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suite.checks import assert_close, describe
from tests import strategies as s
from tests.grading.support import check_reference


@given(a=s.activations(), eps=s.eps)
def test_layer_norm_matches_reference(student, reference, a, eps):
    check_reference(student, reference, "assignment1.layer_norm:LayerNorm", (a.d_model,), {"x": a.x},
                    {"eps": eps}, seed=a.seed, atol=1e-4)


@given(a=s.activations(offset=st.just(1e4), scale=st.sampled_from([1e-2, 1.0])))
def test_layer_norm_is_stable_for_large_offsets(student, reference, a):
    check_reference(student, reference, "assignment1.layer_norm:LayerNorm", (a.d_model,), {"x": a.x},
                    seed=a.seed, atol=2e-2,
                    hint="Subtract the mean before squaring (E[x^2] - E[x]^2 loses precision far from 0).")


@given(a=s.sequences(), d_ff=s.d_ff)
def test_feed_forward_matches_reference(student, reference, a, d_ff):
    check_reference(student, reference, "assignment1.feed_forward:PositionwiseFeedForward", (a.d_model, d_ff),
                    {"x": a.x}, seed=a.seed)


@given(a=s.sequences(d=s.odd_or_even_d_model))
def test_positional_encoding_matches_reference(student, reference, a):
    check_reference(student, reference, "assignment1.positional_encoding:PositionalEncoding", (a.d_model,),
                    {"x": a.x}, {"max_len": 64}, seed=a.seed)


def test_positional_encoding_default_max_len_is_5000(student):
    pe = student.new("assignment1.positional_encoding:PositionalEncoding", 4).state().get("pe")
    from tests.grading.public.test_assignment1 import pe_formula, pe_tolerance

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
