"""Assignment 3, public tier: residual connections, encoder and decoder layers and stacks, the Transformer.

Compared with PyTorch's own `nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer`
(post-norm and pre-norm, ReLU, batch_first) given the same weights, mapped by name, and
with stored reference outputs; plus the properties any correct implementation has (no
leakage from the future or from padding, batch elements independent), each with a check
that trivial outputs fail.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.suite.checks import Mismatch, assert_close, describe, expect_tensor
from tests import strategies as s
from tests.grading.public.test_assignment1 import pe_formula
from tests.grading.public.test_assignment2 import expect_changed, load_torch_mha
from tests.grading.support import check_stored

RC = "assignment3.sublayer:ResidualConnection"
EL = "assignment3.encoder:EncoderLayer"
ENC = "assignment3.encoder:Encoder"
DL = "assignment3.decoder:DecoderLayer"
DEC = "assignment3.decoder:Decoder"
TR = "assignment3.transformer:Transformer"

NORM_HINT = {False: "post-norm (norm_first=False): x = norm(x + dropout(sublayer(x))) in each residual.",
             True: "pre-norm (norm_first=True): x = x + dropout(sublayer(norm(x))) in each residual."}


# names and weights -----------------------------------------------------------------------

def mha_shapes(p, d):
    return {f"{p}w_{n}.{w}": ((d, d) if w == "weight" else (d,)) for n in "qkvo" for w in ("weight", "bias")}


def ff_shapes(p, d, f):
    return {f"{p}linear1.weight": (f, d), f"{p}linear1.bias": (f,), f"{p}linear2.weight": (d, f),
            f"{p}linear2.bias": (d,)}


def norm_shapes(p, d):
    return {f"{p}gamma": (d,), f"{p}beta": (d,)}


def encoder_layer_shapes(d, f, p=""):
    return {**mha_shapes(f"{p}self_attn.", d), **ff_shapes(f"{p}feed_forward.", d, f),
            **{k: v for i in range(2) for k, v in norm_shapes(f"{p}residuals.{i}.norm.", d).items()}}


def decoder_layer_shapes(d, f, p=""):
    return {**mha_shapes(f"{p}self_attn.", d), **mha_shapes(f"{p}cross_attn.", d),
            **ff_shapes(f"{p}feed_forward.", d, f),
            **{k: v for i in range(3) for k, v in norm_shapes(f"{p}residuals.{i}.norm.", d).items()}}


def stack_shapes(layer, n, d, f, p=""):
    shapes = {}
    for i in range(n):
        shapes.update(layer(d, f, f"{p}layers.{i}."))
    return {**shapes, **norm_shapes(f"{p}norm.", d)}


def transformer_shapes(vs, vt, d, f, n):
    return {"src_embed.token.embedding.weight": (vs, d), "tgt_embed.token.embedding.weight": (vt, d),
            **stack_shapes(encoder_layer_shapes, n, d, f, "encoder."),
            **stack_shapes(decoder_layer_shapes, n, d, f, "decoder."),
            "projection.weight": (vt, d), "projection.bias": (vt,)}


def random_state(shapes: dict, seed: int) -> dict:
    """Random weights by name: gammas near 1, betas near 0, the rest N(0, 0.5^2)."""
    state = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        if name.endswith("gamma"):
            state[name] = s.tensor(shape, seed + i, 0.3, 1.0)
        elif name.endswith("beta"):
            state[name] = s.tensor(shape, seed + i, 0.3)
        else:
            state[name] = s.tensor(shape, seed + i, 0.5)
    return state


def expect_names(module, component: str, expected: dict, example: str = ""):
    got = {n: shape for n, (shape, _, _) in module.parameters().items()}
    if got != expected:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        wrong = sorted(n for n in set(got) & set(expected) if got[n] != expected[n])
        raise Mismatch(f"{component}'s parameters have the wrong names or shapes",
                       expected=f"{len(expected)} parameters, e.g. " + ", ".join(sorted(expected)[:4]),
                       got=f"missing: {', '.join(missing[:6]) or 'none'}; unexpected: {', '.join(extra[:6]) or 'none'}"
                           f"; wrong shape: {', '.join(wrong[:6]) or 'none'}",
                       example=example,
                       hint="The grader copies weights by name: use exactly the names in the docstring, and build "
                            "every stacked layer as its own module (repeating one instance shares its parameters).")


# PyTorch's modules with the same weights ---------------------------------------------------

def _copy(dst, src):
    with torch.no_grad():
        dst.copy_(src)


def _load_ff_norms(layer, w, p, n_norms):
    for i in (1, 2):
        _copy(getattr(layer, f"linear{i}").weight, w[f"{p}feed_forward.linear{i}.weight"])
        _copy(getattr(layer, f"linear{i}").bias, w[f"{p}feed_forward.linear{i}.bias"])
    for i in range(n_norms):
        _copy(getattr(layer, f"norm{i + 1}").weight, w[f"{p}residuals.{i}.norm.gamma"])
        _copy(getattr(layer, f"norm{i + 1}").bias, w[f"{p}residuals.{i}.norm.beta"])


def torch_encoder_layer(w, p, d, h, f, nf):
    layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, activation="relu", batch_first=True, norm_first=nf)
    load_torch_mha(layer.self_attn, w, f"{p}self_attn.")
    _load_ff_norms(layer, w, p, 2)
    return layer.eval()


def torch_decoder_layer(w, p, d, h, f, nf):
    layer = nn.TransformerDecoderLayer(d, h, f, dropout=0.0, activation="relu", batch_first=True, norm_first=nf)
    load_torch_mha(layer.self_attn, w, f"{p}self_attn.")
    load_torch_mha(layer.multihead_attn, w, f"{p}cross_attn.")
    _load_ff_norms(layer, w, p, 3)
    return layer.eval()


def torch_encode(w, x, src_real, d, h, f, n, nf, p=""):
    """PyTorch's encoder layers in a stack (grad enabled: the reference math path), final norm only if nf."""
    for i in range(n):
        x = torch_encoder_layer(w, f"{p}layers.{i}.", d, h, f, nf)(x, src_key_padding_mask=~src_real)
    if nf:
        x = F.layer_norm(x, (d,), w[f"{p}norm.gamma"], w[f"{p}norm.beta"], 1e-5)
    return x.detach()


def torch_decode(w, y, memory, src_real, tgt_real, d, h, f, n, nf, p=""):
    T = y.shape[1]
    future = ~torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(n):
        y = torch_decoder_layer(w, f"{p}layers.{i}.", d, h, f, nf)(
            y, memory, tgt_mask=future, tgt_key_padding_mask=~tgt_real, memory_key_padding_mask=~src_real)
    if nf:
        y = F.layer_norm(y, (d,), w[f"{p}norm.gamma"], w[f"{p}norm.beta"], 1e-5)
    return y.detach()


def torch_embed(weight, ids):
    d = weight.shape[1]
    return (F.embedding(ids, weight).double() * math.sqrt(d) + pe_formula(ids.shape[1], d)).float()


def torch_transformer(w, src, tgt, pad, d, h, f, n, nf):
    src_real, tgt_real = src != pad, tgt != pad
    memory = torch_encode(w, torch_embed(w["src_embed.token.embedding.weight"], src), src_real, d, h, f, n, nf,
                          "encoder.")
    y = torch_decode(w, torch_embed(w["tgt_embed.token.embedding.weight"], tgt), memory, src_real, tgt_real,
                     d, h, f, n, nf, "decoder.")
    return F.linear(y, w["projection.weight"], w["projection.bias"])


def masks(src_real, tgt_real=None):
    """The contract's masks: src (B, 1, 1, S), tgt (B, 1, T, T); True = may attend."""
    src_mask = src_real[:, None, None, :]
    if tgt_real is None:
        return src_mask
    T = tgt_real.shape[1]
    return src_mask, tgt_real[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()


def check_gradients(grads, skip=()):
    for name, g in sorted((grads or {}).items()):
        if name.endswith("w_k.bias") or any(name.startswith(p) for p in skip):
            continue  # a key bias shifts every score of a row equally: softmax ignores it
        if type(g) is not torch.Tensor or not bool(torch.isfinite(g).all()) or not bool((g != 0).any()):
            raise Mismatch(f"no gradient reaches {name}", expected="a finite, non-zero gradient",
                           got="None" if g is None else "zeros or non-finite values",
                           hint="Use every sublayer in forward, without detaching.")
    if not grads:
        raise Mismatch("no gradient reaches the parameters", expected="gradients", got="none",
                       hint="Build the output from the module's layers, without torch.no_grad().")


# ResidualConnection ----------------------------------------------------------------------

def _sublayer(student, d, seed):
    w, b = s.tensor([d, d], seed, 0.7), s.tensor([d], seed + 1, 0.5)
    return student.call("kit:linear_sublayer", w, b), (lambda x: torch.tanh(F.linear(x, w, b)))


def _norm(x, gamma, beta):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, 1e-5)


def _residual_check(student, a, seed, nf):
    d = a.d_model
    gamma, beta = s.tensor([d], seed, 0.3, 1.0), s.tensor([d], seed + 1, 0.3)
    remote_sub, sub = _sublayer(student, d, seed + 2)
    m = student.new(RC, d, dropout=0.0, norm_first=nf).load({"norm.gamma": gamma, "norm.beta": beta},
                                                             "ResidualConnection").eval()
    expected = a.x + sub(_norm(a.x, gamma, beta)) if nf else _norm(a.x + sub(a.x), gamma, beta)
    assert_close(m(a.x, remote_sub), expected, name=f"ResidualConnection output (norm_first={nf})",
                 example=describe(x=a.x, gamma=gamma, norm_first=nf, sublayer="tanh(linear(x))"), atol=1e-5,
                 hint="pre-norm (norm_first=True): x + dropout(sublayer(norm(x))); post-norm (norm_first=False): "
                      "norm(x + dropout(sublayer(x))).")


@given(a=s.sequences(), seed=s.seeds)
def test_residual_post_norm_matches_formula(student, a, seed):
    _residual_check(student, a, seed, False)


@given(a=s.sequences(), seed=s.seeds)
def test_residual_pre_norm_matches_formula(student, a, seed):
    _residual_check(student, a, seed, True)


def test_residual_has_named_parts(student):
    for nf in (False, True):
        expect_names(student.new(RC, 6, norm_first=nf), "ResidualConnection", norm_shapes("norm.", 6),
                     example=describe(d_model=6, norm_first=nf))


def test_residual_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 5, 8], 4)
    for nf in (False, True):
        remote_sub, sub = _sublayer(student, 8, 5)
        m = student.new(RC, 8, dropout=0.9, norm_first=nf)
        expected = x + sub(_norm(x, None, None)) if nf else _norm(x + sub(x), None, None)
        example = describe(x=x, dropout=0.9, norm_first=nf)
        assert_close(m.eval()(x, remote_sub), expected, name="output in eval() mode", example=example, atol=1e-5,
                     hint="Use nn.Dropout (a module), which does nothing in eval() mode.")
        expect_changed(expected, expect_tensor(m.train()(x, remote_sub, seed=1), name="output in train() mode",
                                               shape=x.shape),
                       name="the output in train() mode with dropout=0.9", example=example,
                       hint="Apply self.dropout to the sublayer's output.")


def test_residual_gradients_reach_every_parameter(student):
    x = s.tensor([2, 3, 8], 0)
    for nf in (False, True):
        remote_sub, _ = _sublayer(student, 8, 1)
        _, (gx,), grads = student.new(RC, 8, dropout=0.0, norm_first=nf).backward(
            x, remote_sub, grad_output=s.tensor([2, 3, 8], 2))
        check_gradients(grads)
        expect_tensor(gx, name="gradient with respect to x", shape=x.shape)


# EncoderLayer ----------------------------------------------------------------------------

@given(cfg=s.layer_configs(), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_layer_matches_torch(student, cfg, src, nf, seed):
    d, h, f = cfg
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    w = random_state(encoder_layer_shapes(d, f), seed)
    expected = torch_encoder_layer(w, "", d, h, f, nf)(x, src_key_padding_mask=~src.real).detach()
    m = student.new(EL, d, h, f, dropout=0.0, norm_first=nf).load(w, "EncoderLayer").eval()
    assert_close(m(x, masks(src.real)), expected, name=f"EncoderLayer output (norm_first={nf})",
                 example=describe(x=x, src_mask=masks(src.real), n_heads=h, d_ff=f, norm_first=nf), atol=1e-4,
                 hint="residuals[0] around self_attn(x, x, x, src_mask), then residuals[1] around feed_forward; "
                      + NORM_HINT[nf])


def test_encoder_layer_matches_stored_reference(student):
    check_stored(student, "assignment3", "encoder_layer_post_norm", atol=1e-4, hint=NORM_HINT[False])
    check_stored(student, "assignment3", "encoder_layer_pre_norm", atol=1e-4, hint=NORM_HINT[True])


def test_encoder_layer_has_named_parts(student):
    expect_names(student.new(EL, 8, 2, 16), "EncoderLayer", encoder_layer_shapes(8, 16),
                 example=describe(d_model=8, n_heads=2, d_ff=16))


def _padding_check(student, target, component, args, src, extra, seed, kind):
    """Appending padding to the source (blocked by the mask) leaves every output unchanged."""
    d = args[0] if kind == "layer" else args[1]
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    longer = torch.cat([x, s.tensor([B, extra, d], seed + 1, 3.0)], dim=1)
    real = torch.cat([src.real, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    m = student.new(target, *args, dropout=0.0).load(random_state(
        encoder_layer_shapes(d, args[-1]) if kind == "layer" else stack_shapes(encoder_layer_shapes, args[0], d,
                                                                                 args[-1]), seed), component).eval()
    before = expect_tensor(m(x, masks(src.real)), name=f"{component} output", shape=x.shape)
    after = expect_tensor(m(longer, masks(real)), name=f"{component} output with padding appended",
                          shape=longer.shape)
    example = describe(x=x, src_mask=masks(src.real), padding_appended=extra)
    assert_close(after[:, :S], before, name="outputs at the original positions", example=example, atol=1e-4,
                 hint="Padded keys must be blocked: pass src_mask to the self-attention.")
    changed = x.clone()
    changed[:, 0] += 1.0
    expect_changed(before, m(changed, masks(src.real)), name="the output when a real position changes",
                   example=example, hint="The output must depend on the input.")


@given(cfg=s.layer_configs(), src=s.padded_tokens(), extra=st.integers(1, 3), seed=s.seeds)
def test_encoder_layer_source_padding_does_not_leak(student, cfg, src, extra, seed):
    d, h, f = cfg
    _padding_check(student, EL, "EncoderLayer", (d, h, f), src, extra, seed, "layer")


def test_encoder_layer_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 5, 8], 1)
    real = torch.ones(2, 5, dtype=torch.bool)
    w = random_state(encoder_layer_shapes(8, 16), 3)
    expected = torch_encoder_layer(w, "", 8, 2, 16, False)(x, src_key_padding_mask=~real).detach()
    m = student.new(EL, 8, 2, 16, dropout=0.9).load(w, "EncoderLayer")
    example = describe(x=x, dropout=0.9)
    assert_close(m.eval()(x, masks(real)), expected, name="output in eval() mode", example=example, atol=1e-4,
                 hint="Pass dropout to every sublayer and residual; nn.Dropout does nothing in eval() mode.")
    expect_changed(expected, expect_tensor(m.train()(x, masks(real), seed=1), name="output in train() mode",
                                           shape=x.shape),
                   name="the output in train() mode with dropout=0.9", example=example,
                   hint="Pass dropout on to MultiHeadAttention, PositionwiseFeedForward and ResidualConnection.")


def test_encoder_layer_gradients_reach_every_parameter(student):
    x = s.tensor([2, 4, 8], 0)
    for nf in (False, True):
        _, _, grads = student.new(EL, 8, 2, 16, dropout=0.0, norm_first=nf).backward(
            x, masks(torch.ones(2, 4, dtype=torch.bool)), grad_output=s.tensor([2, 4, 8], 1))
        check_gradients(grads)


# Encoder ---------------------------------------------------------------------------------

@given(cfg=s.layer_configs(), n=st.integers(1, 2), src=s.padded_tokens(), nf=st.booleans(), seed=s.seeds)
def test_encoder_matches_torch(student, cfg, n, src, nf, seed):
    d, h, f = cfg
    B, S = src.tokens.shape
    x = s.tensor([B, S, d], seed)
    w = random_state(stack_shapes(encoder_layer_shapes, n, d, f), seed)
    expected = torch_encode(w, x, src.real, d, h, f, n, nf)
    m = student.new(ENC, n, d, h, f, dropout=0.0, norm_first=nf).load(w, "Encoder").eval()
    assert_close(m(x, masks(src.real)), expected, name=f"Encoder output (norm_first={nf})",
                 example=describe(x=x, src_mask=masks(src.real), n_layers=n, norm_first=nf), atol=1e-4,
                 hint="Run the layers in order, each on the previous one's output; apply the final norm only "
                      "when norm_first.")


def test_encoder_matches_stored_reference(student):
    check_stored(student, "assignment3", "encoder_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "encoder_pre_norm", atol=1e-4,
                 hint="With norm_first the stack ends with self.norm.")


def test_encoder_has_named_parts(student):
    expect_names(student.new(ENC, 2, 8, 2, 16), "Encoder", stack_shapes(encoder_layer_shapes, 2, 8, 16),
                 example=describe(n_layers=2, d_model=8, n_heads=2, d_ff=16))


def _final_norm_check(student, target, component, shapes, run_torch, inputs):
    for nf in (False, True):
        w = random_state(shapes, 11)
        w["norm.gamma"], w["norm.beta"] = torch.full((8,), 3.0), torch.full((8,), 5.0)
        expected = run_torch(w, nf)
        m = student.new(target, 2, 8, 2, 16, dropout=0.0, norm_first=nf).load(w, component).eval()
        assert_close(m(*inputs), expected, name=f"{component} output (norm_first={nf}, norm.gamma=3, norm.beta=5)",
                     atol=1e-4, example=describe(norm_first=nf),
                     hint="Apply self.norm at the end only when norm_first (pre-norm layers leave their output "
                          "un-normalised); post-norm layers already end in a norm, so no final norm then."
                     if nf else "With norm_first=False the stack must not apply self.norm (it exists only so "
                                "state dicts match): post-norm layers already end in a norm.")


def test_encoder_final_norm_only_with_norm_first(student):
    x, real = s.tensor([2, 5, 8], 2), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    _final_norm_check(student, ENC, "Encoder", stack_shapes(encoder_layer_shapes, 2, 8, 16),
                      lambda w, nf: torch_encode(w, x, real, 8, 2, 16, 2, nf), (x, masks(real)))


@given(cfg=s.layer_configs(), src=s.padded_tokens(), extra=st.integers(1, 3), seed=s.seeds)
def test_encoder_source_padding_does_not_leak(student, cfg, src, extra, seed):
    d, h, f = cfg
    _padding_check(student, ENC, "Encoder", (2, d, h, f), src, extra, seed, "stack")


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
    m = student.new(DL, d, h, f, dropout=0.0, norm_first=nf).load(w, "DecoderLayer").eval()
    assert_close(m(x, memory, src_mask, tgt_mask), expected, name=f"DecoderLayer output (norm_first={nf})",
                 example=describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask, norm_first=nf),
                 atol=1e-4,
                 hint="self_attn(x, x, x, tgt_mask), then cross_attn(x, memory, memory, src_mask) (queries from "
                      "the decoder, keys and values from the encoder), then feed_forward; " + NORM_HINT[nf])


def test_decoder_layer_matches_stored_reference(student):
    check_stored(student, "assignment3", "decoder_layer_post_norm", atol=1e-4, hint=NORM_HINT[False])
    check_stored(student, "assignment3", "decoder_layer_pre_norm", atol=1e-4, hint=NORM_HINT[True])


def test_decoder_layer_has_named_parts(student):
    expect_names(student.new(DL, 8, 2, 16), "DecoderLayer", decoder_layer_shapes(8, 16),
                 example=describe(d_model=8, n_heads=2, d_ff=16))


def _future_check(student, module, component, x, memory, src_real, t, seed):
    B, T, d = x.shape
    src_mask, tgt_mask = masks(src_real, torch.ones(B, T, dtype=torch.bool))
    changed = x.clone()
    changed[:, t + 1:] += s.tensor([B, T - t - 1, d], seed, 2.0)
    before = expect_tensor(module(x, memory, src_mask, tgt_mask), name=f"{component} output", shape=x.shape)
    after = module(changed, memory, src_mask, tgt_mask)
    example = describe(x=x, memory=memory, tgt_mask=tgt_mask, changed_from_position=t + 1)
    assert_close(after[:, :t + 1], before[:, :t + 1], name=f"outputs at positions 0..{t}", example=example,
                 atol=1e-5, hint="Pass tgt_mask to the self-attention: position i may only see positions j <= i.")
    expect_changed(before[:, t + 1:], after[:, t + 1:], name="the outputs at the changed positions",
                   example=example, hint="The output must depend on the input.")


@given(cfg=s.layer_configs(), pair=s.source_and_target(), data=st.data(), seed=s.seeds)
def test_decoder_layer_does_not_leak_the_future(student, cfg, pair, data, seed):
    d, h, f = cfg
    x, memory = _decoder_inputs(pair, d, seed)
    x = torch.cat([x, s.tensor([x.shape[0], 1, d], seed + 2)], dim=1)  # at least 2 positions
    t = data.draw(st.integers(0, x.shape[1] - 2), label="last position kept")
    m = student.new(DL, d, h, f, dropout=0.0).load(random_state(decoder_layer_shapes(d, f), seed),
                                                   "DecoderLayer").eval()
    _future_check(student, m, "DecoderLayer", x, memory, pair[0].real, t, seed + 3)


@given(cfg=s.layer_configs(), pair=s.source_and_target(), extra=st.integers(1, 3), seed=s.seeds)
def test_decoder_layer_attends_to_the_memory(student, cfg, pair, extra, seed):
    d, h, f = cfg
    src, tgt = pair
    x, memory = _decoder_inputs(pair, d, seed)
    B, S = src.tokens.shape
    m = student.new(DL, d, h, f, dropout=0.0).load(random_state(decoder_layer_shapes(d, f), seed),
                                                   "DecoderLayer").eval()
    src_mask, tgt_mask = masks(src.real, tgt.real)
    before = expect_tensor(m(x, memory, src_mask, tgt_mask), name="DecoderLayer output", shape=x.shape)
    example = describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask)
    longer = torch.cat([memory, s.tensor([B, extra, d], seed + 5, 3.0)], dim=1)
    real = torch.cat([src.real, torch.zeros(B, extra, dtype=torch.bool)], dim=1)
    assert_close(m(x, longer, masks(real), tgt_mask), before, name="output with padding appended to the memory",
                 example=example, atol=1e-4, hint="Pass src_mask to the cross-attention: padded source positions "
                                                  "must get no weight.")
    changed = memory.clone()
    changed[:, 0] += 2.0  # position 0 of every source row is real
    expect_changed(before, m(x, changed, src_mask, tgt_mask), name="the output when the memory changes",
                   example=example,
                   hint="Cross-attention takes its keys and values from the encoder's output: "
                        "cross_attn(x, memory, memory, src_mask).")


def test_decoder_layer_dropout_is_inactive_in_eval(student):
    x, memory = s.tensor([2, 5, 8], 1), s.tensor([2, 4, 8], 2)
    src_real, tgt_real = torch.ones(2, 4, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)
    w = random_state(decoder_layer_shapes(8, 16), 3)
    expected = torch_decoder_layer(w, "", 8, 2, 16, False)(
        x, memory, tgt_mask=~torch.ones(5, 5, dtype=torch.bool).tril(), memory_key_padding_mask=~src_real).detach()
    m = student.new(DL, 8, 2, 16, dropout=0.9).load(w, "DecoderLayer")
    example = describe(x=x, memory=memory, dropout=0.9)
    assert_close(m.eval()(x, memory, *masks(src_real, tgt_real)), expected, name="output in eval() mode",
                 example=example, atol=1e-4,
                 hint="Pass dropout to every sublayer and residual; nn.Dropout does nothing in eval() mode.")
    expect_changed(expected, expect_tensor(m.train()(x, memory, *masks(src_real, tgt_real), seed=1),
                                           name="output in train() mode", shape=x.shape),
                   name="the output in train() mode with dropout=0.9", example=example,
                   hint="Pass dropout on to both attentions, the feed-forward network and the residuals.")


def test_decoder_layer_gradients_reach_every_parameter(student):
    x, memory = s.tensor([2, 4, 8], 0), s.tensor([2, 3, 8], 1)
    for nf in (False, True):
        _, _, grads = student.new(DL, 8, 2, 16, dropout=0.0, norm_first=nf).backward(
            x, memory, *masks(torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool)),
            grad_output=s.tensor([2, 4, 8], 2), wrt=(0, 1))
        check_gradients(grads)


# Decoder ---------------------------------------------------------------------------------

@given(cfg=s.layer_configs(), n=st.integers(1, 2), pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_decoder_matches_torch(student, cfg, n, pair, nf, seed):
    d, h, f = cfg
    src, tgt = pair
    x, memory = _decoder_inputs(pair, d, seed)
    w = random_state(stack_shapes(decoder_layer_shapes, n, d, f), seed)
    expected = torch_decode(w, x, memory, src.real, tgt.real, d, h, f, n, nf)
    src_mask, tgt_mask = masks(src.real, tgt.real)
    m = student.new(DEC, n, d, h, f, dropout=0.0, norm_first=nf).load(w, "Decoder").eval()
    assert_close(m(x, memory, src_mask, tgt_mask), expected, name=f"Decoder output (norm_first={nf})",
                 example=describe(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask, n_layers=n,
                                  norm_first=nf), atol=1e-4,
                 hint="Run the layers in order, each with the same memory and masks; apply the final norm only "
                      "when norm_first.")


def test_decoder_matches_stored_reference(student):
    check_stored(student, "assignment3", "decoder_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "decoder_pre_norm", atol=1e-4,
                 hint="With norm_first the stack ends with self.norm.")


def test_decoder_has_named_parts(student):
    expect_names(student.new(DEC, 2, 8, 2, 16), "Decoder", stack_shapes(decoder_layer_shapes, 2, 8, 16),
                 example=describe(n_layers=2, d_model=8, n_heads=2, d_ff=16))


def test_decoder_final_norm_only_with_norm_first(student):
    x, memory = s.tensor([2, 5, 8], 2), s.tensor([2, 4, 8], 3)
    src_real = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
    tgt_real = torch.tensor([[True] * 5, [True] * 4 + [False]])
    _final_norm_check(student, DEC, "Decoder", stack_shapes(decoder_layer_shapes, 2, 8, 16),
                      lambda w, nf: torch_decode(w, x, memory, src_real, tgt_real, 8, 2, 16, 2, nf),
                      (x, memory, *masks(src_real, tgt_real)))


@given(cfg=s.layer_configs(), pair=s.source_and_target(), data=st.data(), seed=s.seeds)
def test_decoder_does_not_leak_the_future(student, cfg, pair, data, seed):
    d, h, f = cfg
    x, memory = _decoder_inputs(pair, d, seed)
    x = torch.cat([x, s.tensor([x.shape[0], 1, d], seed + 2)], dim=1)
    t = data.draw(st.integers(0, x.shape[1] - 2), label="last position kept")
    m = student.new(DEC, 2, d, h, f, dropout=0.0).load(
        random_state(stack_shapes(decoder_layer_shapes, 2, d, f), seed), "Decoder").eval()
    _future_check(student, m, "Decoder", x, memory, pair[0].real, t, seed + 3)


# Transformer -----------------------------------------------------------------------------

D, H, FF, N = 8, 2, 16, 2


def new_transformer(student, vs, vt, pad, nf=False, seed=0, **kwargs):
    kw = {"d_model": D, "n_heads": H, "n_layers": N, "d_ff": FF, "dropout": 0.0, "max_len": 32, "pad_idx": pad,
          "norm_first": nf, **kwargs}
    m = student.new(TR, vs, vt, **kw)
    return m.load(random_state(transformer_shapes(vs, vt, D, FF, N), seed), "Transformer").eval()


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_matches_torch(student, pair, nf, seed):
    src, tgt = pair
    w = random_state(transformer_shapes(src.vocab, src.vocab, D, FF, N), seed)
    expected = torch_transformer(w, src.tokens, tgt.tokens, src.pad_idx, D, H, FF, N, nf)
    m = new_transformer(student, src.vocab, src.vocab, src.pad_idx, nf, seed)
    assert_close(m(src.tokens, tgt.tokens), expected, name=f"Transformer logits (norm_first={nf})",
                 example=describe(src=src.tokens, tgt=tgt.tokens, pad_idx=src.pad_idx, norm_first=nf), atol=1e-4,
                 hint="projection(decoder(tgt_embed(tgt), encoder(src_embed(src), src_mask), src_mask, tgt_mask)), "
                      "with src_mask = make_pad_mask(src, pad_idx) and tgt_mask = make_tgt_mask(tgt, pad_idx).")


def test_transformer_matches_stored_reference(student):
    check_stored(student, "assignment3", "transformer_post_norm", atol=1e-4)
    check_stored(student, "assignment3", "transformer_pre_norm", atol=1e-4)


def test_transformer_has_named_parts(student):
    m = student.new(TR, 11, 13, d_model=D, n_heads=H, n_layers=N, d_ff=FF, max_len=20, pad_idx=2)
    expect_names(m, "Transformer", transformer_shapes(11, 13, D, FF, N),
                 example=describe(src_vocab_size=11, tgt_vocab_size=13, d_model=D, n_layers=N, d_ff=FF))
    if m.attr("pad_idx") != 2:
        raise Mismatch("Transformer should keep pad_idx", expected="self.pad_idx == 2", got=repr(m.attr("pad_idx")),
                       hint="Store the constructor's pad_idx as self.pad_idx.")


@given(pair=s.source_and_target(), nf=st.booleans(), seed=s.seeds)
def test_transformer_forward_builds_its_masks_from_pad_idx(student, pair, nf, seed):
    src, tgt = pair
    w = random_state(transformer_shapes(src.vocab, src.vocab, D, FF, N), seed)
    m = new_transformer(student, src.vocab, src.vocab, src.pad_idx, nf, seed)
    src_mask, tgt_mask = masks(src.real, tgt.real)
    memory = expect_tensor(m.method("encode", src.tokens, src_mask), name="encode(src, src_mask)",
                           shape=(*src.tokens.shape, D))
    out = expect_tensor(m.method("decode", memory, src_mask, tgt.tokens, tgt_mask),
                        name="decode(memory, src_mask, tgt, tgt_mask)", shape=(*tgt.tokens.shape, D))
    expected = F.linear(out, w["projection.weight"], w["projection.bias"])
    assert_close(m(src.tokens, tgt.tokens), expected, name="forward(src, tgt) compared with your own encode/decode",
                 example=describe(src=src.tokens, tgt=tgt.tokens, pad_idx=src.pad_idx), atol=1e-5,
                 hint=f"forward builds src_mask = make_pad_mask(src, self.pad_idx) (B, 1, 1, S) and tgt_mask = "
                      f"make_tgt_mask(tgt, self.pad_idx) (B, 1, T, T) itself, with pad_idx={src.pad_idx} here; "
                      "then projection(decode(encode(src, src_mask), src_mask, tgt, tgt_mask)).")


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
                           shape=(B, T, D))
    after = m.method("decode", memory, src_mask, changed, tgt_mask)
    example = describe(src=src.tokens, tgt=full, changed_tgt=changed, pad_idx=pad)
    assert_close(after[:, :t + 1], before[:, :t + 1], name=f"decode outputs at positions 0..{t}", example=example,
                 atol=1e-5, hint="Changing target tokens after position t must not change output t: pass tgt_mask "
                                 "on to every decoder layer's self-attention.")
    expect_changed(before[:, t + 1:], after[:, t + 1:], name="decode outputs at the changed positions",
                   example=example, hint="decode must embed tgt and run the decoder on it.")


@given(pair=s.source_and_target(), extra=st.integers(1, 3), nf=st.booleans(), seed=s.seeds)
def test_transformer_source_padding_does_not_leak(student, pair, extra, nf, seed):
    src, tgt = pair
    pad, V = src.pad_idx, src.vocab
    m = new_transformer(student, V, V, pad, nf, seed)
    before = expect_tensor(m(src.tokens, tgt.tokens), name="Transformer logits", shape=(*tgt.tokens.shape, V))
    longer = torch.cat([src.tokens, torch.full((src.tokens.shape[0], extra), pad)], dim=1)
    example = describe(src=src.tokens, tgt=tgt.tokens, pad_idx=pad, padding_appended=extra)
    assert_close(m(longer, tgt.tokens), before, name="logits with padding appended to the source", example=example,
                 atol=1e-4, hint="forward must mask the source padding (make_pad_mask(src, self.pad_idx)) in the "
                                 "encoder and in every cross-attention.")
    changed = src.tokens.clone()
    changed[:, 0] = torch.where(changed[:, 0] == (pad + 1) % V, (pad + 2) % V, (pad + 1) % V)
    expect_changed(before, m(changed, tgt.tokens), name="the logits when a real source token changes",
                   example=example, hint="The logits must depend on the source.")


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
    example = describe(src=src, tgt=tgt, changed_batch_element=0)
    assert_close(after[1:], before[1:], name="logits of the batch elements that did not change", example=example,
                 atol=1e-5, hint="Batch elements must not mix: keep the batch dimension first everywhere.")
    expect_changed(before[0], after[0], name="the logits of the changed batch element", example=example,
                   hint="The logits must depend on the tokens.")


def test_transformer_init_is_xavier_uniform(student):
    check_xavier(student)


def check_xavier(student):
    m = student.new(TR, 30, 25, d_model=16, n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=16, pad_idx=0)
    state, params = m.state(), m.parameters()
    for name, (shape, _, _) in sorted(params.items()):
        if len(shape) < 2:
            continue
        p = state[name].double()
        fan_in, fan_out = shape[1], shape[0]
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        std = float(p.std())
        ok = float(p.abs().max()) <= bound * (1 + 1e-5) and float(p.abs().max()) >= 0.8 * bound \
            and 0.8 * bound / math.sqrt(3) <= std <= 1.2 * bound / math.sqrt(3)
        if not ok:
            raise Mismatch(f"{name} is not Xavier-uniform initialised",
                           expected=f"values in [-{bound:.4g}, {bound:.4g}] (xavier_uniform_ for shape {shape}), "
                                    f"std about {bound / math.sqrt(3):.4g}",
                           got=f"max |value| {float(p.abs().max()):.4g}, std {std:.4g}",
                           example=describe(src_vocab_size=30, tgt_vocab_size=25, d_model=16, d_ff=32),
                           hint="After building every part, apply nn.init.xavier_uniform_ to each parameter with "
                                "more than one dimension (embedding tables included), then zero the padding rows.")


def test_transformer_padding_rows_are_zero(student):
    check_padding_rows(student)


def check_padding_rows(student):
    for pad in (0, 3):
        state = student.new(TR, 9, 7, d_model=D, n_heads=H, n_layers=1, d_ff=FF, max_len=16, pad_idx=pad).state()
        for name in ("src_embed.token.embedding.weight", "tgt_embed.token.embedding.weight"):
            table = expect_tensor(state.get(name), name=name, dtype=torch.float32,
                                  hint="The embeddings are TransformerEmbedding modules named src_embed, tgt_embed.")
            assert_close(table[pad], torch.zeros(D), name=f"row {pad} (pad_idx) of {name}", atol=0, rtol=0,
                         example=describe(pad_idx=pad),
                         hint="Xavier init overwrites the padding rows too: zero them again afterwards, under "
                              "torch.no_grad().")
            others = torch.cat([table[:pad], table[pad + 1:]])
            if bool((others.abs().sum(-1) == 0).any()):
                raise Mismatch(f"only the padding row of {name} should be zero", expected="non-zero rows elsewhere",
                               got="a zero row for a real token", example=describe(pad_idx=pad),
                               hint="Zero only the row pad_idx.")


def test_transformer_gradients_reach_every_parameter(student):
    src, tgt = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]]), torch.tensor([[1, 6, 2], [3, 0, 0]])
    for nf in (False, True):
        m = student.new(TR, 8, 8, d_model=D, n_heads=H, n_layers=N, d_ff=FF, dropout=0.0, max_len=16, pad_idx=0,
                        norm_first=nf)
        _, _, grads = m.backward(src, tgt, grad_output=s.tensor([2, 3, 8], 1), wrt=())
        check_gradients(grads, skip=() if nf else ("encoder.norm.", "decoder.norm."))
