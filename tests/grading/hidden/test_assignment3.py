"""Assignment 3, hidden tier: the live reference, on inputs drawn with the course's own seed; each
composite also graded with the reference's versions of its parts swapped in (isolated checks)."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suite.checks import assert_close, describe
from tests import strategies as s
from tests.grading.helpers.checks import NORM_HINT, check_padding_rows, check_xavier, kit_sublayer
from tests.grading.helpers.names import (
    DECODER,
    DECODER_LAYER,
    ENCODER,
    ENCODER_LAYER,
    FEED_FORWARD,
    LAYER_NORM,
    MHA,
    PAD_MASK,
    RESIDUAL,
    TGT_MASK,
    TRANSFORMER,
    TRANSFORMER_EMBEDDING,
    masks,
)
from tests.grading.support import check_reference, reference_module

LAYER_PARTS = (MHA, FEED_FORWARD, RESIDUAL)


def _residual(student, reference, a, seed, nf, hint=""):
    d = a.d_model
    ref = reference_module(reference, RESIDUAL, d, dropout=0.0, norm_first=nf, seed=seed)
    remote_sub, sub = kit_sublayer(student, d, seed + 2)
    with torch.no_grad():
        expected = ref(a.x, sub)
    m = student.new(RESIDUAL, d, dropout=0.0, norm_first=nf).load(ref.state_dict(), "ResidualConnection").eval()
    assert_close(m(a.x, remote_sub), expected, name=f"ResidualConnection output (norm_first={nf})",
                 example=describe(x=a.x, norm_first=nf), hint=hint or NORM_HINT[nf])


@given(a=s.sequences(), seed=s.seeds, nf=st.booleans())
def test_residual_matches_reference(student, reference, a, seed, nf):
    _residual(student, reference, a, seed, nf)


@given(a=s.sequences(), seed=s.seeds, nf=st.booleans())
def test_residual_matches_reference_with_reference_norm(student, reference, a, seed, nf):
    student.swap(LAYER_NORM)
    _residual(student, reference, a, seed, nf,
              hint="Graded on the reference's LayerNorm: check the order of norm, sublayer, dropout and the "
                   "residual sum. " + NORM_HINT[nf])


def _layer_inputs(cfg, src, seed):
    d = cfg[0]
    B, S = src.tokens.shape
    return {"x": s.tensor([B, S, d], seed), "src_mask": masks(src.real)}


@given(cfg=s.layer_configs(), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_layer_matches_reference(student, reference, cfg, src, nf, seed):
    check_reference(student, reference, ENCODER_LAYER, cfg, _layer_inputs(cfg, src, seed),
                    {"dropout": 0.0, "norm_first": nf},
                    seed=seed, atol=1e-4, hint=NORM_HINT[nf])


@given(cfg=s.layer_configs(), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_layer_matches_reference_with_reference_parts(student, reference, cfg, src, nf, seed):
    student.swap(*LAYER_PARTS)
    check_reference(student, reference, ENCODER_LAYER, cfg, _layer_inputs(cfg, src, seed),
                    {"dropout": 0.0, "norm_first": nf},
                    seed=seed, atol=1e-4,
                    hint="Graded on the reference's MultiHeadAttention, PositionwiseFeedForward and "
                         "ResidualConnection: check the wiring, residuals[0] around self_attn(x, x, x, src_mask), "
                         "residuals[1] around feed_forward.")


@given(cfg=s.layer_configs(), n=st.integers(1, 2), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_matches_reference(student, reference, cfg, n, src, nf, seed):
    check_reference(student, reference, ENCODER, (n, *cfg), _layer_inputs(cfg, src, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4)


@given(cfg=s.layer_configs(), n=st.integers(1, 2), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_matches_reference_with_reference_parts(student, reference, cfg, n, src, nf, seed):
    student.swap(ENCODER_LAYER, LAYER_NORM)
    check_reference(student, reference, ENCODER, (n, *cfg), _layer_inputs(cfg, src, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4,
                    hint="Graded on the reference's EncoderLayer and LayerNorm: run the layers in order and apply "
                         "the final norm only when norm_first.")


def _decoder_inputs(cfg, pair, seed):
    d = cfg[0]
    src, tgt = pair
    B = src.tokens.shape[0]
    src_mask, tgt_mask = masks(src.real, tgt.real)
    return {"x": s.tensor([B, tgt.tokens.shape[1], d], seed), "memory": s.tensor([B, src.tokens.shape[1], d], seed + 1),
            "src_mask": src_mask, "tgt_mask": tgt_mask}


@given(cfg=s.layer_configs(), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_layer_matches_reference(student, reference, cfg, pair, nf, seed):
    check_reference(student, reference, DECODER_LAYER, cfg, _decoder_inputs(cfg, pair, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4, hint=NORM_HINT[nf])


@given(cfg=s.layer_configs(), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_layer_matches_reference_with_reference_parts(student, reference, cfg, pair, nf, seed):
    student.swap(*LAYER_PARTS)
    check_reference(student, reference, DECODER_LAYER, cfg, _decoder_inputs(cfg, pair, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4,
                    hint="Graded on the reference's MultiHeadAttention, PositionwiseFeedForward and "
                         "ResidualConnection: check the wiring, self_attn(x, x, x, tgt_mask), then "
                         "cross_attn(x, memory, memory, src_mask), then feed_forward.")


@given(cfg=s.layer_configs(), n=st.integers(1, 2), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_matches_reference(student, reference, cfg, n, pair, nf, seed):
    check_reference(student, reference, DECODER, (n, *cfg), _decoder_inputs(cfg, pair, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4)


@given(cfg=s.layer_configs(), n=st.integers(1, 2), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_matches_reference_with_reference_parts(student, reference, cfg, n, pair, nf, seed):
    student.swap(DECODER_LAYER, LAYER_NORM)
    check_reference(student, reference, DECODER, (n, *cfg), _decoder_inputs(cfg, pair, seed),
                    {"dropout": 0.0, "norm_first": nf}, seed=seed, atol=1e-4,
                    hint="Graded on the reference's DecoderLayer and LayerNorm: run the layers in order with the "
                         "same memory and masks; apply the final norm only when norm_first.")


def _transformer(student, reference, pair, nf, seed, hint=""):
    src, tgt = pair
    kwargs = {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "dropout": 0.0, "max_len": 16,
              "pad_idx": src.pad_idx, "norm_first": nf}
    check_reference(student, reference, TRANSFORMER, (src.vocab, src.vocab + 2), {"src": src.tokens, "tgt": tgt.tokens},
                    kwargs, seed=seed, atol=1e-4, hint=hint)


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_matches_reference(student, reference, pair, nf, seed):
    _transformer(student, reference, pair, nf, seed)


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_matches_reference_with_reference_parts(student, reference, pair, nf, seed):
    student.swap(TRANSFORMER_EMBEDDING, ENCODER, DECODER, PAD_MASK, TGT_MASK)
    _transformer(student, reference, pair, nf, seed,
                 hint="Graded on the reference's embeddings, Encoder, Decoder and masks: check the wiring, "
                      "projection(decode(encode(src, src_mask), src_mask, tgt, tgt_mask)) with masks built from "
                      "self.pad_idx.")


def test_transformer_init_with_reference_parts(student):
    """Xavier init and zero padding rows are the Transformer's own job, whatever its parts."""
    student.swap(TRANSFORMER_EMBEDDING, ENCODER, DECODER, PAD_MASK, TGT_MASK)
    check_xavier(student)
    check_padding_rows(student)
