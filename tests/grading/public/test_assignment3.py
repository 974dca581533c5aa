"""Assignment 3, public tier: residual connections, encoder and decoder layers and stacks, the Transformer.

Compared with PyTorch's own `nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer`
(post-norm and pre-norm, ReLU, batch_first) given the same weights, mapped by name, and
with stored reference outputs; plus the properties any correct implementation has (no
leakage from the future or from padding, batch elements independent), each with a check
that trivial outputs fail.
"""


import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.pattern import Hint
from grader.suite.checks import Mismatch, describe, expect_tensor
from grader.suite.example import carrying
from tests import strategies as s
from tests.grading.helpers.checks import (
    BEFORE,
    NORM_HINT,
    check_dropout_inactive_in_eval,
    check_dropout_placement,
    check_padding_rows,
    check_xavier,
    expect_changed,
    expect_gradients,
    expect_names,
    kit_sublayer,
    perturb,
)
from tests.grading.helpers.compare import assert_close
from tests.grading.helpers.device import Case, check_device_placement, stored_case
from tests.grading.helpers.names import (
    DECODER,
    DECODER_LAYER,
    ENCODER,
    ENCODER_LAYER,
    RESIDUAL,
    TRANSFORMER,
    decoder_layer_shapes,
    encoder_layer_shapes,
    masks,
    norm_shapes,
    random_state,
    stack_shapes,
    transformer_shapes,
)
from tests.grading.helpers.oracles import (
    layer_norm,
    torch_decode,
    torch_decoder_layer,
    torch_encode,
    torch_encoder_layer,
    torch_transformer,
)
from tests.grading.support import check_stored, stored

D_FF = 16  # the hidden size of the feed-forward networks of the layers built below


def expect_layer_gradients(module, grads, component: str, nf: bool, example: str):
    # a post-norm stack never applies its final norm (it exists so that state dicts match): no gradient there
    skip = () if nf else ("norm.", "encoder.norm.", "decoder.norm.")
    expect_gradients(module, grads, component=f"{component} (norm_first={nf})", skip=skip, example=example)


# ResidualConnection ----------------------------------------------------------------------

def _residual_check(student, a, seed, nf):
    d = a.d_model
    gamma, beta = s.tensor([d], seed, 0.3, 1.0), s.tensor([d], seed + 1, 0.3)
    remote_sub, sub = kit_sublayer(student, d, seed + 2)
    m = student.new(RESIDUAL, d, dropout=0.0, norm_first=nf).load({"norm.gamma": gamma, "norm.beta": beta},
                                                                   "ResidualConnection").eval()
    expected = a.x + sub(layer_norm(a.x, gamma, beta)) if nf else layer_norm(a.x + sub(a.x), gamma, beta)
    assert_close(m(a.x, remote_sub), expected, name=f"ResidualConnection output (norm_first={nf})",
                 example=carrying(describe(x=a.x, gamma=gamma, beta=beta, norm_first=nf, sublayer="tanh(linear(x))"),
                                  sublayer_seed=seed + 2),
                 atol=1e-5,
                 hint=f"The output differs from the {NORM_HINT[nf].split(':')[0]} formula. Likely causes: the norm "
                      "applied in the other order (pre-norm: x + dropout(sublayer(norm(x))); post-norm: "
                      "norm(x + dropout(sublayer(x)))), norm_first ignored, or the residual x not added.")


@given(a=s.sequences(), seed=s.seeds)
def test_residual_post_norm_matches_formula(student, a, seed):
    _residual_check(student, a, seed, False)


@given(a=s.sequences(), seed=s.seeds)
def test_residual_pre_norm_matches_formula(student, a, seed):
    _residual_check(student, a, seed, True)


def test_residual_has_named_parts(student):
    for nf in (False, True):
        expect_names(student.new(RESIDUAL, 6, norm_first=nf), "ResidualConnection", norm_shapes(6, "norm."),
                     example=describe(d_model=6, norm_first=nf))


def test_residual_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 5, 8], 4)
    for nf in (False, True):
        remote_sub, sub = kit_sublayer(student, 8, 5)
        m = student.new(RESIDUAL, 8, dropout=0.9, norm_first=nf)
        check_dropout_inactive_in_eval(m, (x, remote_sub), x + sub(layer_norm(x)) if nf else layer_norm(x + sub(x)),
                                       component=f"ResidualConnection (norm_first={nf})",
                                       uses="to the sublayer's output",
                                       example=carrying(describe(x=x, norm_first=nf), sublayer_seed=5))


def test_residual_dropout_sits_where_the_docstring_says(student):
    x = s.tensor([2, 5, 8], 6)
    gamma, beta = s.tensor([8], 7, 0.3, 1.0), s.tensor([8], 8, 0.3)
    for nf in (False, True):
        remote_sub, _ = kit_sublayer(student, 8, 9)
        m = student.new(RESIDUAL, 8, dropout=1.0, norm_first=nf).load({"norm.gamma": gamma, "norm.beta": beta},
                                                                       "ResidualConnection")
        check_dropout_placement(
            m, (x, remote_sub), x if nf else layer_norm(x, gamma, beta),
            component=f"ResidualConnection (norm_first={nf})",
            placement="x itself (x + dropout(sublayer(norm(x))) = x + 0)" if nf
            else "norm(x) (norm(x + dropout(sublayer(x))) = norm(x + 0))",
            causes="dropout applied to the residual sum, or to the sublayer's input, instead of to the "
                   "sublayer's output.",
            example=carrying(describe(x=x, gamma=gamma, beta=beta, norm_first=nf, sublayer="tanh(linear(x))"),
                             sublayer_seed=9))


def test_residual_gradients_reach_every_parameter(student):
    x = s.tensor([2, 3, 8], 0)
    for nf in (False, True):
        remote_sub, _ = kit_sublayer(student, 8, 1)
        m = student.new(RESIDUAL, 8, dropout=0.0, norm_first=nf)
        _, (gx,), grads = m.backward(x, remote_sub, grad_output=s.tensor([2, 3, 8], 2))
        expect_gradients(m, grads, component=f"ResidualConnection (norm_first={nf})",
                         example=describe(x=x, norm_first=nf, sublayer="tanh(linear(x))"))
        expect_tensor(gx, name="gradient with respect to x", shape=x.shape)


# EncoderLayer ----------------------------------------------------------------------------

@given(cfg=s.layer_configs(), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_layer_matches_torch(student, cfg, src, nf, seed):
    d, h, f = cfg
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    w = random_state(encoder_layer_shapes(d, f), seed)
    expected = torch_encoder_layer(w, "", d, h, f, nf)(x, src_key_padding_mask=~src.real).detach()
    m = student.new(ENCODER_LAYER, d, h, f, dropout=0.0, norm_first=nf).load(w, "EncoderLayer").eval()
    assert_close(m(x, masks(src.real)), expected, name=f"EncoderLayer output (norm_first={nf})",
                 example=carrying(describe(x=x, src_mask=masks(src.real), n_heads=h, d_ff=f, norm_first=nf), seed=seed),
                 atol=1e-4,
                 hint="The output differs from nn.TransformerEncoderLayer's with the same weights. Likely causes: "
                      "the residuals swapped (residuals[0] goes around self_attn(x, x, x, src_mask), residuals[1] "
                      "around feed_forward), src_mask not passed on, or the norm order; " + NORM_HINT[nf])


def test_encoder_layer_matches_stored_reference(student):
    check_stored(student, "assignment3", "encoder_layer_post_norm", atol=1e-4, hint=NORM_HINT[False])
    check_stored(student, "assignment3", "encoder_layer_pre_norm", atol=1e-4, hint=NORM_HINT[True])


def test_encoder_layer_has_named_parts(student):
    expect_names(student.new(ENCODER_LAYER, 8, 2, D_FF), "EncoderLayer", encoder_layer_shapes(8, D_FF),
                 example=describe(d_model=8, n_heads=2, d_ff=D_FF))


def _padding_check(m, component: str, src, extra: int, seed: int, built: dict):
    """Appending padding to the source (blocked by the mask) leaves every output unchanged; changing a real
    position changes it. `built`: how `m` was built (d_model, n_heads, d_ff, norm_first, the weights' seed,
    n_layers for a stack), carried with the example for --repro."""
    d = built["d_model"]
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    longer = torch.cat([x, s.tensor([B, extra, d], seed + 1, 3.0)], dim=1)
    real = torch.cat([src.real, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    before = expect_tensor(m(x, masks(src.real)), name=f"{component} output", shape=x.shape)
    after = expect_tensor(m(longer, masks(real)), name=f"{component} output with padding appended",
                          shape=longer.shape)
    changed = perturb(x, (slice(None), 0), seed + 2)  # position 0 is real in every row
    example = carrying(describe(x=x, src_mask=masks(src.real), padding_appended=extra), longer=longer,
                       changed=changed, **built)
    assert_close(after[:, :S], before,
                 basis=BEFORE, name="outputs at the original positions", example=example, atol=1e-4,
                 hint=Hint("Appending padded (masked) positions changed the outputs at the real ones. Likely "
                           "causes: src_mask not passed to the self-attention of every layer, or its polarity "
                           "inverted.", "everywhere"))
    expect_changed(before, m(changed, masks(src.real)), name="the output when a real position changes",
                   example=example, hint="The output ignores its input. Likely causes: forward returns its input "
                                         "unchanged or a constant.")


@given(cfg=s.layer_configs(), src=s.padded_tokens(), extra=st.integers(1, 3), nf=st.booleans(), seed=s.seeds)
def test_encoder_layer_source_padding_does_not_leak(student, cfg, src, extra, nf, seed):
    d, h, f = cfg
    m = student.new(ENCODER_LAYER, d, h, f, dropout=0.0, norm_first=nf).load(
        random_state(encoder_layer_shapes(d, f), seed), "EncoderLayer").eval()
    _padding_check(m, "EncoderLayer", src, extra, seed, {"d_model": d, "n_heads": h, "d_ff": f, "norm_first": nf,
                                                          "seed": seed})


def test_encoder_layer_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 5, 8], 1)
    real = torch.ones(2, 5, dtype=torch.bool)
    w = random_state(encoder_layer_shapes(8, D_FF), 3)
    expected = torch_encoder_layer(w, "", 8, 2, D_FF, False)(x, src_key_padding_mask=~real).detach()
    m = student.new(ENCODER_LAYER, 8, 2, D_FF, dropout=0.9).load(w, "EncoderLayer")
    check_dropout_inactive_in_eval(m, (x, masks(real)), expected, component="EncoderLayer", atol=1e-4,
                                   uses="in MultiHeadAttention, PositionwiseFeedForward and both ResidualConnections",
                                   example=carrying(describe(x=x, src_mask=masks(real)), n_heads=2, d_ff=D_FF,
                                                    seed=3))


def test_encoder_layer_dropout_sits_where_the_docstring_says(student):
    x, real = s.tensor([2, 5, 8], 7), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    w = random_state(encoder_layer_shapes(8, D_FF), 8)
    for nf in (False, True):
        expected = torch_encoder_layer(w, "", 8, 2, D_FF, nf, dropout=1.0)(x, src_key_padding_mask=~real).detach()
        m = student.new(ENCODER_LAYER, 8, 2, D_FF, dropout=1.0, norm_first=nf).load(w, "EncoderLayer")
        check_dropout_placement(
            m, (x, masks(real)), expected, component=f"EncoderLayer (norm_first={nf})", atol=1e-4,
            placement="x itself (each residual adds dropout(...) = 0)" if nf
            else "residuals[1].norm(residuals[0].norm(x)) (each residual adds 0 before its norm)",
            causes="the dropout argument not passed on to the ResidualConnections (their own default is 0.1), or "
                   "an extra dropout on the layer's input or output.",
            example=carrying(describe(x=x, src_mask=masks(real), norm_first=nf), n_heads=2, d_ff=D_FF, seed=8))


def test_encoder_layer_gradients_reach_every_parameter(student):
    x = s.tensor([2, 4, 8], 0)
    for nf in (False, True):
        m = student.new(ENCODER_LAYER, 8, 2, D_FF, dropout=0.0, norm_first=nf)
        _, _, grads = m.backward(x, masks(torch.ones(2, 4, dtype=torch.bool)), grad_output=s.tensor([2, 4, 8], 1))
        expect_layer_gradients(m, grads, "EncoderLayer", nf, describe(x=x, norm_first=nf))


# Encoder ---------------------------------------------------------------------------------

@given(cfg=s.layer_configs(), n=st.integers(1, 2), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_matches_torch(student, cfg, n, src, nf, seed):
    d, h, f = cfg
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    w = random_state(stack_shapes(encoder_layer_shapes, n, d, f), seed)
    expected = torch_encode(w, x, src.real, d, h, f, n, nf)
    m = student.new(ENCODER, n, d, h, f, dropout=0.0, norm_first=nf).load(w, "Encoder").eval()
    assert_close(m(x, masks(src.real)), expected, name=f"Encoder output (norm_first={nf})",
                 example=carrying(describe(x=x, src_mask=masks(src.real), n_layers=n, norm_first=nf), n_heads=h, d_ff=f,
                                  seed=seed), atol=1e-4,
                 hint="The output differs from PyTorch's layers run in a stack. Likely causes: a layer run on the "
                      "stack's input instead of the previous layer's output, src_mask not passed to every layer, or "
                      "the final norm applied when norm_first is False (or not applied when it is True).")


def test_encoder_matches_stored_reference(student):
    check_stored(student, "assignment3", "encoder_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "encoder_pre_norm", atol=1e-4,
                 hint="Only the pre-norm case differs. Likely causes: self.norm not applied at the end of the "
                      "stack when norm_first.")


def test_encoder_has_named_parts(student):
    expect_names(student.new(ENCODER, 2, 8, 2, D_FF), "Encoder", stack_shapes(encoder_layer_shapes, 2, 8, D_FF),
                 example=describe(n_layers=2, d_model=8, n_heads=2, d_ff=D_FF))


def _final_norm_check(student, target, component, shapes, run_torch, inputs: dict):
    """`inputs`: the forward's arguments by name, in order (the example shows them all: the masks too)."""
    for nf in (False, True):
        w = random_state(shapes, 11)
        w["norm.gamma"], w["norm.beta"] = torch.full((8,), 3.0), torch.full((8,), 5.0)
        expected = run_torch(w, nf)
        m = student.new(target, 2, 8, 2, D_FF, dropout=0.0, norm_first=nf).load(w, component).eval()
        # a final norm applied or left out changes every batch element alike: the hint says so only then
        assert_close(m(*inputs.values()), expected,
                     name=f"{component} output (norm_first={nf}, norm.gamma=3, norm.beta=5)", atol=1e-4,
                     example=carrying(describe(**inputs, norm_first=nf), n_heads=2, d_ff=D_FF, n_layers=2, seed=11),
                     alike=True,
                     hint="With norm_first=True the output differs from the layers followed by self.norm. Likely "
                          "causes: self.norm not applied at the end, or applied inside the loop."
                     if nf else "With norm_first=False the output differs from the layers alone. Likely causes: "
                                "self.norm applied at the end (it exists only so that state dicts match; post-norm "
                                "layers already end in a norm).")


def test_encoder_final_norm_only_with_norm_first(student):
    x, real = s.tensor([2, 5, 8], 2), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    _final_norm_check(student, ENCODER, "Encoder", stack_shapes(encoder_layer_shapes, 2, 8, D_FF),
                      lambda w, nf: torch_encode(w, x, real, 8, 2, D_FF, 2, nf), {"x": x, "src_mask": masks(real)})


def test_encoder_dropout_sits_where_the_docstring_says(student):
    x, real = s.tensor([2, 5, 8], 9), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    w = random_state(stack_shapes(encoder_layer_shapes, 2, 8, D_FF), 10)
    for nf in (False, True):
        m = student.new(ENCODER, 2, 8, 2, D_FF, dropout=1.0, norm_first=nf).load(w, "Encoder")
        check_dropout_placement(m, (x, masks(real)), torch_encode(w, x, real, 8, 2, D_FF, 2, nf, dropout=1.0),
                                component=f"Encoder (norm_first={nf})", atol=1e-4,
                                placement="norm(x) (every residual adds 0)" if nf
                                else "x through the residuals' norms only (every residual adds 0 before its norm)",
                                causes="the dropout argument not passed on to the EncoderLayers (their own default "
                                       "is 0.1), or an extra dropout in the stack.",
                                example=carrying(describe(x=x, src_mask=masks(real), n_layers=2, norm_first=nf),
                                                 n_heads=2, d_ff=D_FF, seed=10))


@given(cfg=s.layer_configs(), src=s.padded_tokens(), extra=st.integers(1, 3), nf=st.booleans(), seed=s.seeds)
def test_encoder_source_padding_does_not_leak(student, cfg, src, extra, nf, seed):
    d, h, f = cfg
    m = student.new(ENCODER, 2, d, h, f, dropout=0.0, norm_first=nf).load(
        random_state(stack_shapes(encoder_layer_shapes, 2, d, f), seed), "Encoder").eval()
    _padding_check(m, "Encoder", src, extra, seed, {"d_model": d, "n_heads": h, "d_ff": f, "norm_first": nf,
                                                     "seed": seed, "n_layers": 2})


# DecoderLayer ----------------------------------------------------------------------------

def _decoder_inputs(pair, d, seed):
    src, tgt = pair
    B = src.tokens.shape[0]
    return s.tensor([B, tgt.tokens.shape[1], d], seed), s.tensor([B, src.tokens.shape[1], d], seed + 1)


@given(cfg=s.layer_configs(), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_layer_matches_torch(student, cfg, pair, nf, seed):
    d, h, f = cfg
    src, tgt = pair
    x, memory = _decoder_inputs(pair, d, seed)
    w = random_state(decoder_layer_shapes(d, f), seed)
    T = x.shape[1]
    expected = torch_decoder_layer(w, "", d, h, f, nf)(
        x, memory, tgt_mask=~torch.ones(T, T, dtype=torch.bool).tril(), tgt_key_padding_mask=~tgt.real,
        memory_key_padding_mask=~src.real).detach()
    src_mask, tgt_mask = masks(src.real, tgt.real)
    m = student.new(DECODER_LAYER, d, h, f, dropout=0.0, norm_first=nf).load(w, "DecoderLayer").eval()
    assert_close(m(x, memory, src_mask, tgt_mask), expected, name=f"DecoderLayer output (norm_first={nf})",
                 example=carrying(describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask, norm_first=nf),
                                  n_heads=h, d_ff=f, seed=seed),
                 atol=1e-4,
                 hint="The output differs from nn.TransformerDecoderLayer's with the same weights. Likely causes: "
                      "the order of the sublayers (self_attn(x, x, x, tgt_mask), then cross_attn(x, memory, memory, "
                      "src_mask), then feed_forward), the masks swapped, or the norm order; " + NORM_HINT[nf])


def test_decoder_layer_matches_stored_reference(student):
    check_stored(student, "assignment3", "decoder_layer_post_norm", atol=1e-4, hint=NORM_HINT[False])
    check_stored(student, "assignment3", "decoder_layer_pre_norm", atol=1e-4, hint=NORM_HINT[True])


def test_decoder_layer_has_named_parts(student):
    expect_names(student.new(DECODER_LAYER, 8, 2, D_FF), "DecoderLayer", decoder_layer_shapes(8, D_FF),
                 example=describe(d_model=8, n_heads=2, d_ff=D_FF))


def _future_check(module, component, inputs: tuple, t: int, built: dict):
    """inputs: (x, memory, src_real); `built`: how `module` was built (n_heads, d_ff, the weights' seed, n_layers
    for a stack), carried with the example for --repro."""
    x, memory, src_real = inputs
    B, T, d = x.shape
    src_mask, tgt_mask = masks(src_real, torch.ones(B, T, dtype=torch.bool))
    changed = perturb(x, (slice(None), slice(t + 1, None)), built["seed"] + 3, 2.0)
    before = expect_tensor(module(x, memory, src_mask, tgt_mask), name=f"{component} output", shape=x.shape)
    after = module(changed, memory, src_mask, tgt_mask)
    example = carrying(describe(x=x, memory=memory, tgt_mask=tgt_mask, changed_from_position=t + 1),
                       src_mask=src_mask, changed=changed, **built)
    assert_close(after[:, :t + 1], before[:, :t + 1],
                 basis=BEFORE, name=f"outputs at positions 0..{t}", example=example,
                 atol=1e-5, hint=Hint("Changing inputs after position t changed outputs up to t. Likely causes: "
                                      "tgt_mask not passed to the self-attention (of every layer), or src_mask "
                                      "passed there instead.", "everywhere"))
    expect_changed(before[:, t + 1:], after[:, t + 1:], name="the outputs at the changed positions",
                   example=example, hint="The output ignores its input. Likely causes: forward returns its input "
                                         "unchanged or a constant.")


@given(cfg=s.layer_configs(), pair=s.source_and_target(), data=st.data(), seed=s.seeds)
def test_decoder_layer_does_not_leak_the_future(student, cfg, pair, data, seed):
    d, h, f = cfg
    x, memory = _decoder_inputs(pair, d, seed)
    x = torch.cat([x, s.tensor([x.shape[0], 1, d], seed + 2)], dim=1)  # at least 2 positions
    t = data.draw(st.integers(0, x.shape[1] - 2), label="last position kept")
    m = student.new(DECODER_LAYER, d, h, f, dropout=0.0).load(random_state(decoder_layer_shapes(d, f), seed),
                                                   "DecoderLayer").eval()
    _future_check(m, "DecoderLayer", (x, memory, pair[0].real), t, {"n_heads": h, "d_ff": f, "seed": seed})


@given(cfg=s.layer_configs(), pair=s.source_and_target(), extra=st.integers(1, 3), seed=s.seeds)
def test_decoder_layer_attends_to_the_memory(student, cfg, pair, extra, seed):
    d, h, f = cfg
    src, tgt = pair
    x, memory = _decoder_inputs(pair, d, seed)
    B, S = src.tokens.shape
    m = student.new(DECODER_LAYER, d, h, f, dropout=0.0).load(random_state(decoder_layer_shapes(d, f), seed),
                                                   "DecoderLayer").eval()
    src_mask, tgt_mask = masks(src.real, tgt.real)
    before = expect_tensor(m(x, memory, src_mask, tgt_mask), name="DecoderLayer output", shape=x.shape)
    longer = torch.cat([memory, s.tensor([B, extra, d], seed + 5, 3.0)], dim=1)
    real = torch.cat([src.real, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    changed = perturb(memory, (slice(None), 0), seed + 6, 2.0)  # position 0 of every source row is real
    example = carrying(describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask), longer_memory=longer,
                       changed_memory=changed, n_heads=h, d_ff=f, seed=seed)
    assert_close(m(x, longer, masks(real), tgt_mask), before,
                 basis=BEFORE, name="output with padding appended to the memory",
                 example=example, atol=1e-4,
                 hint="Appending padded (masked) memory positions changed the output. Likely causes: src_mask not "
                      "passed to the cross-attention, or tgt_mask passed there instead.")
    expect_changed(before, m(x, changed, src_mask, tgt_mask), name="the output when the memory changes",
                   example=example,
                   hint="The output ignores the memory. Likely causes: the cross-attention takes its keys and "
                        "values from x instead of memory: cross_attn(x, memory, memory, src_mask).")


def test_decoder_layer_dropout_is_inactive_in_eval(student):
    x, memory = s.tensor([2, 5, 8], 1), s.tensor([2, 4, 8], 2)
    src_real, tgt_real = torch.ones(2, 4, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)
    w = random_state(decoder_layer_shapes(8, D_FF), 3)
    expected = torch_decoder_layer(w, "", 8, 2, D_FF, False)(
        x, memory, tgt_mask=~torch.ones(5, 5, dtype=torch.bool).tril(), memory_key_padding_mask=~src_real).detach()
    m = student.new(DECODER_LAYER, 8, 2, D_FF, dropout=0.9).load(w, "DecoderLayer")
    check_dropout_inactive_in_eval(m, (x, memory, *masks(src_real, tgt_real)), expected, component="DecoderLayer",
                                   uses="in both attentions, the PositionwiseFeedForward and the three "
                                        "ResidualConnections", atol=1e-4,
                                   example=carrying(describe(x=x, memory=memory), src_mask=masks(src_real),
                                                    tgt_mask=masks(src_real, tgt_real)[1], n_heads=2, d_ff=D_FF,
                                                    seed=3))


def test_decoder_layer_dropout_sits_where_the_docstring_says(student):
    x, memory = s.tensor([2, 5, 8], 7), s.tensor([2, 4, 8], 8)
    src_real = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
    tgt_real = torch.tensor([[True] * 5, [True] * 4 + [False]])
    w = random_state(decoder_layer_shapes(8, D_FF), 9)
    for nf in (False, True):
        expected = torch_decoder_layer(w, "", 8, 2, D_FF, nf, dropout=1.0)(
            x, memory, tgt_mask=~torch.ones(5, 5, dtype=torch.bool).tril(), tgt_key_padding_mask=~tgt_real,
            memory_key_padding_mask=~src_real).detach()
        m = student.new(DECODER_LAYER, 8, 2, D_FF, dropout=1.0, norm_first=nf).load(w, "DecoderLayer")
        check_dropout_placement(
            m, (x, memory, *masks(src_real, tgt_real)), expected, component=f"DecoderLayer (norm_first={nf})",
            atol=1e-4, placement="x itself (each residual adds dropout(...) = 0)" if nf
            else "the three residual norms applied to x in turn (each residual adds 0 before its norm)",
            causes="the dropout argument not passed on to the ResidualConnections (their own default is 0.1), or "
                   "an extra dropout on the layer's input or output.",
            example=carrying(describe(x=x, memory=memory, norm_first=nf), src_mask=masks(src_real),
                             tgt_mask=masks(src_real, tgt_real)[1], n_heads=2, d_ff=D_FF, seed=9))


def test_decoder_layer_gradients_reach_every_parameter(student):
    x, memory = s.tensor([2, 4, 8], 0), s.tensor([2, 3, 8], 1)
    for nf in (False, True):
        m = student.new(DECODER_LAYER, 8, 2, D_FF, dropout=0.0, norm_first=nf)
        everything = masks(torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool))
        _, _, grads = m.backward(x, memory, *everything, grad_output=s.tensor([2, 4, 8], 2), wrt=(0, 1))
        expect_layer_gradients(m, grads, "DecoderLayer", nf, describe(x=x, memory=memory, norm_first=nf))


# Decoder ---------------------------------------------------------------------------------

@given(cfg=s.layer_configs(), n=st.integers(1, 2), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_matches_torch(student, cfg, n, pair, nf, seed):
    d, h, f = cfg
    src, tgt = pair
    x, memory = _decoder_inputs(pair, d, seed)
    w = random_state(stack_shapes(decoder_layer_shapes, n, d, f), seed)
    expected = torch_decode(w, x, memory, src.real, tgt.real, d, h, f, n, nf)
    src_mask, tgt_mask = masks(src.real, tgt.real)
    m = student.new(DECODER, n, d, h, f, dropout=0.0, norm_first=nf).load(w, "Decoder").eval()
    assert_close(m(x, memory, src_mask, tgt_mask), expected, name=f"Decoder output (norm_first={nf})",
                 example=carrying(describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask, n_layers=n,
                                           norm_first=nf), n_heads=h, d_ff=f, seed=seed), atol=1e-4,
                 hint="The output differs from PyTorch's layers run in a stack. Likely causes: a layer run on the "
                      "stack's input instead of the previous layer's output, other memory or masks given to some "
                      "layer, or the final norm applied when norm_first is False (or not when it is True).")


def test_decoder_matches_stored_reference(student):
    check_stored(student, "assignment3", "decoder_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "decoder_pre_norm", atol=1e-4,
                 hint="Only the pre-norm case differs. Likely causes: self.norm not applied at the end of the "
                      "stack when norm_first.")


def test_decoder_has_named_parts(student):
    expect_names(student.new(DECODER, 2, 8, 2, D_FF), "Decoder", stack_shapes(decoder_layer_shapes, 2, 8, D_FF),
                 example=describe(n_layers=2, d_model=8, n_heads=2, d_ff=D_FF))


def test_decoder_final_norm_only_with_norm_first(student):
    x, memory = s.tensor([2, 5, 8], 2), s.tensor([2, 4, 8], 3)
    src_real = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
    tgt_real = torch.tensor([[True] * 5, [True] * 4 + [False]])
    _final_norm_check(student, DECODER, "Decoder", stack_shapes(decoder_layer_shapes, 2, 8, D_FF),
                      lambda w, nf: torch_decode(w, x, memory, src_real, tgt_real, 8, 2, D_FF, 2, nf),
                      dict(zip(("x", "memory", "src_mask", "tgt_mask"), (x, memory, *masks(src_real, tgt_real)),
                               strict=True)))


def test_decoder_dropout_sits_where_the_docstring_says(student):
    x, memory = s.tensor([2, 5, 8], 10), s.tensor([2, 4, 8], 11)
    src_real = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
    tgt_real = torch.tensor([[True] * 5, [True] * 4 + [False]])
    w = random_state(stack_shapes(decoder_layer_shapes, 2, 8, D_FF), 12)
    for nf in (False, True):
        m = student.new(DECODER, 2, 8, 2, D_FF, dropout=1.0, norm_first=nf).load(w, "Decoder")
        check_dropout_placement(
            m, (x, memory, *masks(src_real, tgt_real)),
            torch_decode(w, x, memory, src_real, tgt_real, 8, 2, D_FF, 2, nf, dropout=1.0),
            component=f"Decoder (norm_first={nf})", atol=1e-4,
            placement="norm(x) (every residual adds 0)" if nf
            else "x through the residuals' norms only (every residual adds 0 before its norm)",
            causes="the dropout argument not passed on to the DecoderLayers (their own default is 0.1), or an "
                   "extra dropout in the stack.",
            example=carrying(describe(x=x, memory=memory, n_layers=2, norm_first=nf), src_mask=masks(src_real),
                             tgt_mask=masks(src_real, tgt_real)[1], n_heads=2, d_ff=D_FF, seed=12))


@given(cfg=s.layer_configs(), pair=s.source_and_target(), data=st.data(), seed=s.seeds)
def test_decoder_does_not_leak_the_future(student, cfg, pair, data, seed):
    d, h, f = cfg
    x, memory = _decoder_inputs(pair, d, seed)
    x = torch.cat([x, s.tensor([x.shape[0], 1, d], seed + 2)], dim=1)
    t = data.draw(st.integers(0, x.shape[1] - 2), label="last position kept")
    m = student.new(DECODER, 2, d, h, f, dropout=0.0).load(
        random_state(stack_shapes(decoder_layer_shapes, 2, d, f), seed), "Decoder").eval()
    _future_check(m, "Decoder", (x, memory, pair[0].real), t, {"n_heads": h, "d_ff": f, "seed": seed,
                                                                 "n_layers": 2})


# Transformer -----------------------------------------------------------------------------

D_MODEL, N_HEADS, N_LAYERS = 8, 2, 2  # the Transformers built below (with d_ff = D_FF)


def new_transformer(student, vs, vt, pad, nf=False, seed=0, **kwargs):
    kw = {"d_model": D_MODEL, "n_heads": N_HEADS, "n_layers": N_LAYERS, "d_ff": D_FF, "dropout": 0.0, "max_len": 32,
          "pad_idx": pad, "norm_first": nf, **kwargs}
    m = student.new(TRANSFORMER, vs, vt, **kw)
    return m.load(random_state(transformer_shapes(vs, vt, D_MODEL, D_FF, N_LAYERS), seed), "Transformer").eval()


def sized(example, vocab: int, nf: bool, seed: int, **extra):
    """`example` carrying how new_transformer built the model (its sizes, vocab for both sides, norm_first, the
    weights' seed): --repro builds the same one."""
    return carrying(example, **{"vocab": vocab, "norm_first": nf, "seed": seed, "d_model": D_MODEL,
                                "n_heads": N_HEADS, "n_layers": N_LAYERS, "d_ff": D_FF, "max_len": 32, **extra})


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_matches_torch(student, pair, nf, seed):
    src, tgt = pair
    w = random_state(transformer_shapes(src.vocab, src.vocab, D_MODEL, D_FF, N_LAYERS), seed)
    expected = torch_transformer(w, src.tokens, tgt.tokens, src.pad_idx, D_MODEL, N_HEADS, D_FF, N_LAYERS, nf)
    m = new_transformer(student, src.vocab, src.vocab, src.pad_idx, nf, seed)
    assert_close(m(src.tokens, tgt.tokens), expected, name=f"Transformer logits (norm_first={nf})",
                 example=sized(describe(src=src.tokens, tgt=tgt.tokens, pad_idx=src.pad_idx, norm_first=nf),
                               src.vocab, nf, seed), atol=1e-4,
                 hint="The logits differ from PyTorch's stack with the same weights. Likely causes: the wiring of "
                      "projection(decoder(tgt_embed(tgt), encoder(src_embed(src), src_mask), src_mask, tgt_mask)), "
                      "masks not built with make_pad_mask(src, pad_idx) and make_tgt_mask(tgt, pad_idx), or a part "
                      "that fails its own checks.")


def test_transformer_matches_stored_reference(student):
    check_stored(student, "assignment3", "transformer_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "transformer_pre_norm", atol=1e-4)


def test_transformer_has_named_parts(student):
    m = student.new(TRANSFORMER, 11, 13, d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=D_FF, max_len=20,
                    pad_idx=2)
    expect_names(m, "Transformer", transformer_shapes(11, 13, D_MODEL, D_FF, N_LAYERS),
                 example=describe(src_vocab_size=11, tgt_vocab_size=13, d_model=D_MODEL, n_layers=N_LAYERS, d_ff=D_FF))
    if m.attr("pad_idx") != 2:
        raise Mismatch("Transformer should keep pad_idx", expected="self.pad_idx == 2", got=repr(m.attr("pad_idx")),
                       hint="self.pad_idx is not the constructor's pad_idx. Likely causes: it is not stored, or stored "
                            "under another name.")


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_forward_builds_its_masks_from_pad_idx(student, pair, nf, seed):
    src, tgt = pair
    w = random_state(transformer_shapes(src.vocab, src.vocab, D_MODEL, D_FF, N_LAYERS), seed)
    m = new_transformer(student, src.vocab, src.vocab, src.pad_idx, nf, seed)
    src_mask, tgt_mask = masks(src.real, tgt.real)
    memory = expect_tensor(m.method("encode", src.tokens, src_mask), name="encode(src, src_mask)",
                           shape=(*src.tokens.shape, D_MODEL))
    out = expect_tensor(m.method("decode", memory, src_mask, tgt.tokens, tgt_mask),
                        name="decode(memory, src_mask, tgt, tgt_mask)", shape=(*tgt.tokens.shape, D_MODEL))
    expected = F.linear(out, w["projection.weight"], w["projection.bias"])
    assert_close(m(src.tokens, tgt.tokens), expected, name="forward(src, tgt) compared with your own encode/decode",
                 example=sized(describe(src=src.tokens, tgt=tgt.tokens, pad_idx=src.pad_idx), src.vocab, nf, seed),
                 atol=1e-5,
                 hint=f"forward(src, tgt) differs from your own encode and decode given the contract's masks. Likely "
                      f"causes: forward builds its masks differently from src_mask = make_pad_mask(src, self.pad_idx) "
                      f"and tgt_mask = make_tgt_mask(tgt, self.pad_idx) (pad_idx={src.pad_idx} here), or it does not "
                      "compute projection(decode(encode(src, src_mask), src_mask, tgt, tgt_mask)).")


@given(pair=s.source_and_target(), data=st.data(), nf=st.booleans(), seed=s.seeds)
def test_transformer_decode_does_not_leak_the_future(student, pair, data, nf, seed):
    src, tgt = pair
    pad, V = src.pad_idx, src.vocab
    full = torch.cat([tgt.tokens, tgt.tokens[:, :1]], dim=1)  # at least 2 positions
    full = torch.where(full == pad, (pad + 1) % V, full)  # no padding: every position is graded
    B, T = full.shape
    t = data.draw(st.integers(0, T - 2), label="last position kept")
    changed = full.clone()
    changed[:, t + 1:] = torch.where(full[:, t + 1:] == (pad + 2) % V, (pad + 3) % V, (pad + 2) % V)
    m = new_transformer(student, V, V, pad, nf, seed)
    src_mask, tgt_mask = masks(src.real, torch.ones(B, T, dtype=torch.bool))
    memory = m.method("encode", src.tokens, src_mask)
    before = expect_tensor(m.method("decode", memory, src_mask, full, tgt_mask), name="decode output",
                           shape=(B, T, D_MODEL))
    after = m.method("decode", memory, src_mask, changed, tgt_mask)
    example = sized(describe(src=src.tokens, tgt=full, changed_tgt=changed, pad_idx=pad), V, nf, seed, last_kept=t)
    assert_close(after[:, :t + 1], before[:, :t + 1],
                 basis=BEFORE, name=f"decode outputs at positions 0..{t}", example=example,
                 atol=1e-5, hint="Changing target tokens after position t changed outputs up to t. Likely causes: "
                                 "tgt_mask not passed on to every decoder layer's self-attention.")
    expect_changed(before[:, t + 1:], after[:, t + 1:], name="decode outputs at the changed positions",
                   example=example, hint="decode ignores the target tokens. Likely causes: tgt not embedded with "
                                         "tgt_embed, or the decoder not run on it.")


@given(pair=s.source_and_target(), extra=st.integers(1, 3), nf=st.booleans(), seed=s.seeds)
def test_transformer_source_padding_does_not_leak(student, pair, extra, nf, seed):
    src, tgt = pair
    pad, V = src.pad_idx, src.vocab
    m = new_transformer(student, V, V, pad, nf, seed)
    before = expect_tensor(m(src.tokens, tgt.tokens), name="Transformer logits", shape=(*tgt.tokens.shape, V))
    longer = torch.cat([src.tokens, torch.full((src.tokens.shape[0], extra), pad)], dim=1)
    example = sized(describe(src=src.tokens, tgt=tgt.tokens, pad_idx=pad, padding_appended=extra), V, nf, seed)
    assert_close(m(longer, tgt.tokens), before,
                 basis=BEFORE, name="logits with padding appended to the source", example=example,
                 atol=1e-4, hint="Appending source padding changed the logits. Likely causes: the source padding "
                                 "not masked (make_pad_mask(src, self.pad_idx)) in the encoder or in a "
                                 "cross-attention.")
    changed = src.tokens.clone()
    changed[:, 0] = torch.where(changed[:, 0] == (pad + 1) % V, (pad + 2) % V, (pad + 1) % V)
    expect_changed(before, m(changed, tgt.tokens), name="the logits when a real source token changes",
                   example=example, hint="The logits ignore the source. Likely causes: the decoder not given the "
                                         "encoder's output as memory.")


@given(seed=s.seeds, nf=st.booleans())
def test_transformer_batch_elements_are_independent(student, seed, nf):
    V, pad = 12, 0
    src, tgt = s.tokens((3, 5), V - 1, seed, low=0) + 1, s.tokens((3, 4), V - 1, seed + 1) + 1
    src[1, 3:], tgt[2, 2:] = pad, pad
    m = new_transformer(student, V, V, pad, nf, seed)
    before = expect_tensor(m(src, tgt), name="Transformer logits", shape=(3, 4, V))
    src2, tgt2 = src.clone(), tgt.clone()
    src2[0] = src2[0] % (V - 1) + 1
    tgt2[0] = tgt2[0] % (V - 1) + 1
    after = m(src2, tgt2)
    example = sized(describe(src=src, tgt=tgt, changed_batch_element=0), V, nf, seed, pad_idx=pad)
    assert_close(after[1:], before[1:],
                 basis=BEFORE, name="logits of the batch elements that did not change", example=example,
                 atol=1e-5, hint="Changing batch element 0 changed the others. Likely causes: a reshape or view "
                                 "that mixes the batch dimension with another one.")
    expect_changed(before[0], after[0], name="the logits of the changed batch element", example=example,
                   hint="The logits ignore the tokens. Likely causes: forward returns a constant or the bias only.")


def test_transformer_init_is_xavier_uniform(student):
    check_xavier(student)


def test_transformer_padding_rows_are_zero(student):
    check_padding_rows(student)


def test_transformer_padding_rows_get_no_gradient(student):
    # a setting made at construction (padding_idx passed on to the embeddings), seen before any weights
    # are loaded: nn.Embedding gives the padding row no gradient, so it stays zero in training
    pad = 3
    src, tgt = torch.tensor([[1, 2, 5, 3], [4, 5, 3, 3]]), torch.tensor([[1, 6, 3], [2, 3, 3]])
    m = student.new(TRANSFORMER, 8, 8, d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=D_FF,
                    dropout=0.0, max_len=16, pad_idx=pad)
    grad_output = s.tensor([2, 3, 8], 1)
    # what the text leaves out travels as data: --repro builds the same model and runs the same backward
    example = carrying(describe(src=src, tgt=tgt, pad_idx=pad), grad_output=grad_output, vocab=8, d_model=D_MODEL,
                       n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=D_FF, max_len=16)
    _, _, grads = m.backward(src, tgt, grad_output=grad_output, wrt=())
    for name in ("src_embed.token.embedding.weight", "tgt_embed.token.embedding.weight"):
        grad = expect_tensor(grads.get(name), name=f"gradient of {name}", shape=(8, D_MODEL), example=example,
                             hint="No gradient for this table. Likely causes: the embeddings are not "
                                  "TransformerEmbedding modules named src_embed and tgt_embed.")
        assert_close(grad[pad], torch.zeros(D_MODEL), name=f"gradient of row {pad} (pad_idx) of {name}", atol=0,
                     rtol=0, example=example,
                     hint="The padding row gets a gradient, so training moves it off zero. Likely causes: pad_idx "
                          "not passed on to the embeddings: TransformerEmbedding(..., padding_idx=pad_idx).")


def test_transformer_gradients_reach_every_parameter(student):
    src, tgt = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]]), torch.tensor([[1, 6, 2], [3, 0, 0]])
    for nf in (False, True):
        m = student.new(TRANSFORMER, 8, 8, d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=D_FF,
                        dropout=0.0, max_len=16, pad_idx=0, norm_first=nf)
        _, _, grads = m.backward(src, tgt, grad_output=s.tensor([2, 3, 8], 1), wrt=())
        expect_layer_gradients(m, grads, "Transformer", nf, describe(src=src, tgt=tgt, pad_idx=0, norm_first=nf))


def test_transformer_dropout_sits_where_the_docstring_says(student):
    src, tgt = torch.tensor([[1, 2, 3, 0], [4, 5, 6, 7]]), torch.tensor([[1, 6, 2], [3, 4, 0]])
    for nf in (False, True):
        w = random_state(transformer_shapes(9, 9, D_MODEL, D_FF, N_LAYERS), 13)
        m = student.new(TRANSFORMER, 9, 9, d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=D_FF,
                        dropout=1.0, max_len=16, pad_idx=0, norm_first=nf).load(w, "Transformer")
        check_dropout_placement(
            m, (src, tgt), torch_transformer(w, src, tgt, 0, D_MODEL, N_HEADS, D_FF, N_LAYERS, nf, dropout=1.0),
            component=f"Transformer (norm_first={nf})", atol=1e-4,
            placement="the logits of all-zero embeddings run through the residuals' norms (the embeddings' dropout "
                      "and every residual's drop everything)",
            causes="the dropout argument not passed on to both TransformerEmbeddings, the Encoder or the Decoder "
                   "(their own default is 0.1), or an extra dropout before the projection.",
            example=sized(describe(src=src, tgt=tgt, pad_idx=0, norm_first=nf), 9, nf, 13, max_len=16))


# device placement: each component on PyTorch's meta device (tests/grading/helpers/device.py) ----------

def test_residual_stays_on_the_inputs_device(student):
    sublayer, _ = kit_sublayer(student, 8, 3)
    for nf in (False, True):
        check_device_placement(student, Case(RESIDUAL, (s.tensor([2, 5, 8], 1), sublayer), (8,),
                                             {"dropout": 0.0, "norm_first": nf}), component="ResidualConnection")


def test_encoder_layer_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment3", "encoder_layer_pre_norm")),
                           component="EncoderLayer")


def test_encoder_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment3", "encoder_pre_norm")), component="Encoder")


def test_decoder_layer_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment3", "decoder_layer_post_norm")),
                           component="DecoderLayer")


def test_decoder_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment3", "decoder_pre_norm")), component="Decoder")


def test_transformer_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment3", "transformer_post_norm")),
                           component="Transformer",
                           hint="forward builds its masks: build them on the device of src and tgt (make_pad_mask and "
                                "make_tgt_mask do, when they use the tokens' device).")
