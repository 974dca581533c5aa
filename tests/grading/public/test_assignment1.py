"""Assignment 1, public tier: LayerNorm, feed-forward, positional encoding, embeddings.

Compared with PyTorch's own modules and with stored reference outputs; plus the
properties any correct implementation has, each with a check that trivial outputs fail.
"""

import math

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.suite.checks import Mismatch, assert_close, describe, expect_error, expect_tensor
from tests import strategies as s
from tests.grading.support import check_stored

LN = "assignment1.layer_norm:LayerNorm"
FF = "assignment1.feed_forward:PositionwiseFeedForward"
PE = "assignment1.positional_encoding:PositionalEncoding"
TOK = "assignment1.embedding:TokenEmbedding"
EMB = "assignment1.embedding:TransformerEmbedding"


def expect_names(module, component: str, parameters: dict, buffers: dict | None = None):
    """The module's parameters (and buffers) are exactly these names and shapes."""
    got = {n: shape for n, (shape, _, _) in module.parameters().items()}
    if got != parameters:
        raise Mismatch(f"{component}'s parameters have the wrong names or shapes",
                       expected=", ".join(f"{n} {s}" for n, s in parameters.items()),
                       got=", ".join(f"{n} {s}" for n, s in got.items()) or "no parameters",
                       hint="The grader copies weights by name: use exactly the names in the docstring.")
    for name, shape in (buffers or {}).items():
        have = module.buffers()
        if name not in have or have[name][0] != shape:
            raise Mismatch(f"{component} should register a buffer {name} of shape {shape}",
                           expected=f"buffer {name} {shape}", got=f"buffers: {have or 'none'}",
                           hint="Use self.register_buffer(name, tensor).")


def pe_formula(max_len: int, d: int) -> torch.Tensor:
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d)[None, :]
    angle = p / 10000 ** ((i - i % 2).double() / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))  # (max_len, d)


def pe_tolerance(rows: int, d: int) -> torch.Tensor:
    return (1e-5 + 2e-7 * torch.arange(rows, dtype=torch.float64))[:, None].expand(rows, d)


# LayerNorm -------------------------------------------------------------------------------

@given(a=s.activations(), eps=s.eps)
def test_layer_norm_matches_torch(student, a, eps):
    ref = torch.nn.LayerNorm(a.d_model, eps=eps)
    with torch.no_grad():
        ref.weight.copy_(s.tensor([a.d_model], a.seed + 1))
        ref.bias.copy_(s.tensor([a.d_model], a.seed + 2))
        expected = ref(a.x)
    m = student.new(LN, a.d_model, eps=eps).load({"gamma": ref.weight, "beta": ref.bias}, "LayerNorm")
    assert_close(m(a.x), expected, name="LayerNorm output", example=describe(x=a.x, eps=eps, gamma=ref.weight),
                 hint="Biased variance (divide by d_model), eps inside the square root, gamma and beta per feature.")


def test_layer_norm_matches_stored_reference(student):
    check_stored(student, "assignment1", "layer_norm")
    check_stored(student, "assignment1", "layer_norm_eps", hint="Use the eps given to the constructor.")


@given(a=s.activations())
def test_layer_norm_rows_are_normalised(student, a):
    y = expect_tensor(student.new(LN, a.d_model)(a.x), name="LayerNorm output", shape=a.x.shape,
                      dtype=torch.float32, example=describe(x=a.x))
    example = describe(x=a.x, output=y)
    y = y.double()
    assert_close(y.mean(-1), torch.zeros(a.x.shape[:-1], dtype=torch.float64), name="row mean of the output",
                 example=example, atol=1e-4, hint="Subtract the mean over the last dimension.")
    var = y.var(-1, unbiased=False)
    assert_close(var, torch.ones_like(var), name="row variance of the output", example=example, atol=2e-3,
                 rtol=0, hint="Divide by sqrt(var + eps), with the biased variance over the last dimension.")
    # Normalising a row keeps the order of its values; an output that ignores x cannot.
    order = torch.argsort(a.x.double(), dim=-1)
    assert_close(torch.argsort(y, dim=-1), order, name="order of values within each row", example=example,
                 hint="Each row should be shifted and scaled, not reshuffled or replaced.")


def test_layer_norm_has_gamma_and_beta(student):
    m = student.new(LN, 6)
    expect_names(m, "LayerNorm", {"beta": (6,), "gamma": (6,)})
    state = m.state()
    assert_close(state["gamma"], torch.ones(6), name="gamma at initialisation", hint="gamma starts at ones.")
    assert_close(state["beta"], torch.zeros(6), name="beta at initialisation", hint="beta starts at zeros.")
    if not all(g for _, _, g in m.parameters().values()):
        raise Mismatch("gamma and beta should be trainable", expected="requires_grad=True",
                       got=str({n: g for n, (_, _, g) in m.parameters().items()}), hint="Wrap them in nn.Parameter.")


@given(a=s.activations())
def test_layer_norm_applies_gamma_and_beta_per_feature(student, a):
    d = a.d_model
    gamma, beta = torch.linspace(-2, 3, d), s.tensor([d], a.seed + 3)
    plain = expect_tensor(student.new(LN, d)(a.x), name="LayerNorm output", shape=a.x.shape, dtype=torch.float32)
    scaled = student.new(LN, d).load({"gamma": gamma, "beta": beta}, "LayerNorm")(a.x)
    assert_close(scaled, plain * gamma + beta, name="output with gamma and beta",
                 example=describe(x=a.x, gamma=gamma, beta=beta), atol=1e-4,
                 hint="y = gamma * normalised + beta, with gamma[j] and beta[j] applied to feature j.")


@given(a=s.activations(), eps=s.eps)
def test_layer_norm_gradients_match_torch(student, a, eps):
    grad_out = s.tensor(a.x.shape, a.seed + 5)
    x = a.x.clone().requires_grad_(True)
    ref = torch.nn.LayerNorm(a.d_model, eps=eps)
    (ref(x) * grad_out).sum().backward()
    m = student.new(LN, a.d_model, eps=eps)
    _, (gx,), params = m.backward(a.x, grad_output=grad_out)
    example = describe(x=a.x, eps=eps)
    hint = "Build the output from differentiable tensor operations (no .detach(), .item() or .data)."
    assert_close(gx, x.grad, name="gradient with respect to x", example=example, atol=1e-4, hint=hint)
    for name, expected in (("gamma", ref.weight.grad), ("beta", ref.bias.grad)):
        assert_close((params or {}).get(name), expected, name=f"gradient of {name}", example=example, atol=1e-4,
                     hint=hint)


# PositionwiseFeedForward -----------------------------------------------------------------

def _ff_weights(d, f, seed):
    return {"linear1.weight": s.tensor([f, d], seed, 0.5), "linear1.bias": s.tensor([f], seed + 1, 0.5),
            "linear2.weight": s.tensor([d, f], seed + 2, 0.5), "linear2.bias": s.tensor([d], seed + 3, 0.5)}


def _ff_torch(x, w):
    return F.linear(F.relu(F.linear(x, w["linear1.weight"], w["linear1.bias"])), w["linear2.weight"],
                    w["linear2.bias"])


@given(a=s.sequences(), d_ff=s.d_ff)
def test_feed_forward_matches_torch(student, a, d_ff):
    w = _ff_weights(a.d_model, d_ff, a.seed)
    m = student.new(FF, a.d_model, d_ff).load(w, "PositionwiseFeedForward").eval()
    assert_close(m(a.x), _ff_torch(a.x, w), name="PositionwiseFeedForward output",
                 example=describe(x=a.x, d_ff=d_ff), hint="linear2(dropout(relu(linear1(x)))).")


def test_feed_forward_matches_stored_reference(student):
    check_stored(student, "assignment1", "feed_forward")


def test_feed_forward_has_named_layers(student):
    expect_names(student.new(FF, 4, 10), "PositionwiseFeedForward",
                 {"linear1.weight": (10, 4), "linear1.bias": (10,), "linear2.weight": (4, 10), "linear2.bias": (4,)})


@given(a=s.sequences())
def test_feed_forward_dropout_is_inactive_in_eval(student, a):
    w = _ff_weights(a.d_model, 16, a.seed)
    m = student.new(FF, a.d_model, 16, dropout=0.9).load(w, "PositionwiseFeedForward")
    example = describe(x=a.x, dropout=0.9)
    assert_close(m.eval()(a.x), _ff_torch(a.x, w), name="output in eval() mode", example=example,
                 hint="Use nn.Dropout (a module), which does nothing in eval() mode.")
    # ... and dropout exists: in train() mode with p=0.9 the output changes.
    trained = expect_tensor(m.train()(a.x, seed=1), name="output in train() mode", shape=a.x.shape)
    if torch.allclose(trained, _ff_torch(a.x, w)) and a.x.numel() * 16 > 64:
        raise Mismatch("dropout should be active in train() mode", expected="an output that differs from eval()",
                       got="the same output", example=example, hint="Apply self.dropout after the ReLU.")


@given(a=s.sequences(), data=st.data())
def test_feed_forward_treats_positions_independently(student, a, data):
    B, T, d = a.x.shape
    t = data.draw(st.integers(0, T - 1), label="changed position")
    m = student.new(FF, d, 16, dropout=0.0).load(_ff_weights(d, 16, a.seed), "PositionwiseFeedForward").eval()
    changed = a.x.clone()
    changed[:, t] += 1.0
    before, after = m(a.x), m(changed)
    expect_tensor(before, name="output", shape=a.x.shape)
    others = torch.ones(T, dtype=torch.bool)
    others[t] = False
    example = describe(x=a.x, changed_position=t)
    assert_close(after[:, others], before[:, others], name="outputs at the positions that did not change",
                 example=example, hint="The network must act on each position's vector alone.")
    if torch.allclose(after[:, t], before[:, t]):
        raise Mismatch("the output at the changed position should change", expected="a different output",
                       got="the same output", example=example, hint="The output must depend on the input.")


def test_feed_forward_gradients_reach_every_parameter(student):
    x = s.tensor([2, 3, 8], 0)
    m = student.new(FF, 8, 16, dropout=0.0)
    _, (gx,), grads = m.backward(x, grad_output=s.tensor([2, 3, 8], 1))
    for name in ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"):
        g = (grads or {}).get(name)
        if type(g) is not torch.Tensor or not bool(torch.isfinite(g).all()) or not bool((g != 0).any()):
            raise Mismatch(f"no gradient reaches {name}", expected="a finite, non-zero gradient",
                           got="None" if g is None else "zeros or non-finite values",
                           hint="Use the layers in forward, without detaching.")
    expect_tensor(gx, name="gradient with respect to x", shape=x.shape)


# PositionalEncoding ----------------------------------------------------------------------

@given(d=s.odd_or_even_d_model, max_len=st.integers(1, 300))
def test_positional_encoding_matches_formula(student, d, max_len):
    pe = student.new(PE, d, max_len=max_len).state().get("pe")
    expected = pe_formula(max_len, d)
    expect_tensor(pe, name="the pe buffer", shape=(max_len, d), example=describe(d_model=d, max_len=max_len),
                  hint="Register a (max_len, d_model) table named pe.")
    assert_close(pe.double(), expected, name="pe", atol=pe_tolerance(max_len, d), rtol=0,
                 example=describe(d_model=d, max_len=max_len),
                 hint="pe[p, 2i] = sin(p / 10000^(2i/d_model)), pe[p, 2i+1] = cos(same angle).")


def test_positional_encoding_pe_is_a_buffer(student):
    m = student.new(PE, 8, max_len=20)
    if "pe" in m.parameters():
        raise Mismatch("pe should not be a Parameter", expected="a buffer", got="nn.Parameter pe",
                       hint="The encoding is fixed, not learned: self.register_buffer('pe', table).")
    expect_names(m, "PositionalEncoding", {}, {"pe": (20, 8)})
    if not m.buffers()["pe"][2]:
        raise Mismatch("pe should be saved in state_dict", expected="a persistent buffer",
                       got="persistent=False", hint="Register it without persistent=False.")


def test_positional_encoding_moves_with_to(student):
    m = student.new(PE, 6, max_len=10).to(torch.float64)
    pe = expect_tensor(m.state().get("pe"), name="pe after .to(torch.float64)", shape=(10, 6),
                       dtype=torch.float64, hint="Register pe as a buffer so that .to() converts it.")
    assert_close(pe, pe_formula(10, 6), name="pe after .to(torch.float64)", atol=pe_tolerance(10, 6), rtol=0)


@given(a=s.sequences(d=s.odd_or_even_d_model))
def test_positional_encoding_adds_pe_to_input(student, a):
    B, T, d = a.x.shape
    out = student.new(PE, d, max_len=T + 3).eval()(a.x)
    expected = a.x.double() + pe_formula(T, d)
    assert_close(out, expected.float(), name="PositionalEncoding output", atol=1e-5, example=describe(x=a.x),
                 hint="forward(x) = dropout(x + pe[:T]) for x of shape (B, T, d_model).")


@given(d=s.d_model, max_len=st.integers(1, 20), extra=st.integers(1, 5))
def test_positional_encoding_rejects_sequences_longer_than_max_len(student, d, max_len, extra):
    T = max_len + extra
    x = torch.zeros(1, T, d)
    m = student.new(PE, d, max_len=max_len)
    expect_error(lambda: m(x), kind="ValueError", names=[T, max_len],
                 example=describe(x=x, max_len=max_len),
                 hint=f"Raise ValueError with a message naming T ({T}) and max_len ({max_len}).")


def test_positional_encoding_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 9, 8], 3)
    m = student.new(PE, 8, max_len=16, dropout=0.9)
    assert_close(m.eval()(x), (x.double() + pe_formula(9, 8)).float(), name="output in eval() mode", atol=1e-5,
                 hint="Use nn.Dropout, which does nothing in eval() mode.")
    trained = expect_tensor(m.train()(x, seed=1), name="output in train() mode", shape=x.shape)
    if torch.allclose(trained, (x.double() + pe_formula(9, 8)).float(), atol=1e-5):
        raise Mismatch("dropout should be active in train() mode", expected="an output that differs from eval()",
                       got="the same output", hint="Apply self.dropout to x + pe[:T].")


def test_positional_encoding_matches_stored_reference(student):
    check_stored(student, "assignment1", "positional_encoding")


# TokenEmbedding --------------------------------------------------------------------------

@given(batch=s.token_batches(), d=s.d_model, seed=s.seeds)
def test_token_embedding_matches_torch(student, batch, d, seed):
    vocab, x = batch
    w = s.tensor([vocab, d], seed)
    m = student.new(TOK, vocab, d).load({"embedding.weight": w}, "TokenEmbedding")
    assert_close(m(x), F.embedding(x, w) * math.sqrt(d), name="TokenEmbedding output",
                 example=describe(tokens=x, vocab_size=vocab, d_model=d), hint="embedding(x) * sqrt(d_model).")


@given(d=s.d_model)
def test_token_embedding_scales_by_sqrt_d_model(student, d):
    w = torch.ones(5, d)
    out = student.new(TOK, 5, d).load({"embedding.weight": w}, "TokenEmbedding")(torch.tensor([[0, 3]]))
    assert_close(out, torch.full((1, 2, d), math.sqrt(d)), name="output for an all-ones embedding table",
                 example=describe(d_model=d), hint=f"Multiply by sqrt(d_model) = {math.sqrt(d):.4g}.")


@given(batch=s.token_batches(), d=s.d_model, data=st.data())
def test_token_embedding_padding_row_is_zero(student, batch, d, data):
    vocab, x = batch
    pad = data.draw(st.integers(0, vocab - 1), label="padding_idx")
    x = x.clone()
    x[0, 0] = pad
    out = expect_tensor(student.new(TOK, vocab, d, padding_idx=pad)(x), name="TokenEmbedding output",
                        shape=(*x.shape, d), dtype=torch.float32)
    example = describe(tokens=x, padding_idx=pad)
    at_pad = x == pad
    assert_close(out[at_pad], torch.zeros(int(at_pad.sum()), d), name="embedding of the padding token",
                 example=example, atol=0, rtol=0, hint="Pass padding_idx to nn.Embedding.")
    if bool((out[~at_pad].abs().sum(-1) == 0).any()):
        raise Mismatch("only the padding token should embed to zeros", expected="non-zero vectors elsewhere",
                       got="a zero vector for a real token", example=example)


def test_token_embedding_has_named_embedding(student):
    expect_names(student.new(TOK, 9, 4), "TokenEmbedding", {"embedding.weight": (9, 4)})


def test_token_embedding_matches_stored_reference(student):
    check_stored(student, "assignment1", "token_embedding")


# TransformerEmbedding --------------------------------------------------------------------

@given(batch=s.token_batches(), d=s.odd_or_even_d_model, seed=s.seeds)
def test_transformer_embedding_matches_its_parts(student, batch, d, seed):
    vocab, x = batch
    w = s.tensor([vocab, d], seed)
    m = student.new(EMB, vocab, d, max_len=10, dropout=0.0).load({"token.embedding.weight": w},
                                                                 "TransformerEmbedding").eval()
    expected = F.embedding(x, w).double() * math.sqrt(d) + pe_formula(x.shape[1], d)
    assert_close(m(x), expected.float(), name="TransformerEmbedding output", atol=1e-4,
                 example=describe(tokens=x, d_model=d), hint="position(token(x)).")


def test_transformer_embedding_has_named_parts(student):
    expect_names(student.new(EMB, 7, 4, max_len=12), "TransformerEmbedding", {"token.embedding.weight": (7, 4)},
                 {"position.pe": (12, 4)})


def test_transformer_embedding_dropout_is_inactive_in_eval(student):
    x = torch.tensor([[1, 2, 3, 4, 5, 6]])
    w = s.tensor([8, 8], 2)
    m = student.new(EMB, 8, 8, max_len=10, dropout=0.9).load({"token.embedding.weight": w}, "TransformerEmbedding")
    expected = (F.embedding(x, w).double() * math.sqrt(8) + pe_formula(6, 8)).float()
    assert_close(m.eval()(x), expected, name="output in eval() mode", atol=1e-4,
                 hint="Pass dropout to the PositionalEncoding; nn.Dropout does nothing in eval().")
    if torch.allclose(expect_tensor(m.train()(x, seed=1), name="output in train() mode", shape=expected.shape),
                      expected, atol=1e-4):
        raise Mismatch("dropout should be active in train() mode", expected="an output that differs from eval()",
                       got="the same output", hint="Build PositionalEncoding(d_model, max_len, dropout).")


def test_transformer_embedding_matches_stored_reference(student):
    check_stored(student, "assignment1", "transformer_embedding")
