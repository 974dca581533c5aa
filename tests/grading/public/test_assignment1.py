"""Assignment 1, public tier: LayerNorm, feed-forward, positional encoding, embeddings.

Compared with PyTorch's own modules and with stored reference outputs; plus the
properties any correct implementation has, each with a check that trivial outputs fail.
"""

import math

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.pattern import Hint
from grader.suite import draws
from grader.suite.checks import Mismatch, describe, expect_error, expect_tensor
from grader.suite.example import carrying
from tests import strategies as s
from tests.grading.helpers.checks import (
    BEFORE,
    check_dropout_inactive_in_eval,
    check_dropout_placement,
    expect_changed,
    expect_gradients,
    expect_names,
    perturb,
)
from tests.grading.helpers.compare import assert_close
from tests.grading.helpers.device import check_device_placement, stored_case
from tests.grading.helpers.names import (
    FEED_FORWARD,
    LAYER_NORM,
    POSITIONAL_ENCODING,
    TOKEN_EMBEDDING,
    TRANSFORMER_EMBEDDING,
    ff_shapes,
    norm_shapes,
)
from tests.grading.helpers.oracles import embed, feed_forward, ff_weights, pe_formula, pe_tolerance
from tests.grading.support import FRESH_HINT, check_stored, examples, stored

D_FF = 16  # the hidden size of the feed-forward networks built below


# LayerNorm -------------------------------------------------------------------------------

@given(a=s.activations(), eps=s.eps)
def test_layer_norm_matches_torch(student, a, eps):
    ref = torch.nn.LayerNorm(a.d_model, eps=eps)
    with torch.no_grad():
        ref.weight.copy_(s.tensor([a.d_model], a.seed + 1))
        ref.bias.copy_(s.tensor([a.d_model], a.seed + 2))
        expected = ref(a.x)
    m = student.new(LAYER_NORM, a.d_model, eps=eps).load({"gamma": ref.weight, "beta": ref.bias}, "LayerNorm")
    assert_close(m(a.x), expected, name="LayerNorm output",
                 example=describe(x=a.x, eps=eps, gamma=ref.weight, beta=ref.bias),
                 hint=Hint("The output differs from torch.nn.LayerNorm's. Likely causes: the unbiased variance "
                           "(divide by d_model - 1), eps outside the square root, normalising over another dimension, "
                           "gamma and beta swapped.", "everywhere", "scattered"))


def test_layer_norm_matches_stored_reference(student):
    check_stored(student, "assignment1", "layer_norm")
    check_stored(student, "assignment1", "layer_norm_eps",
                 hint="Only the case with eps=0.5 differs. Likely causes: a fixed eps instead of the constructor's.")


@given(a=s.activations())
def test_layer_norm_rows_are_normalised(student, a):
    y = expect_tensor(student.new(LAYER_NORM, a.d_model)(a.x), name="LayerNorm output", shape=a.x.shape,
                      dtype=torch.float32, example=describe(x=a.x))
    example = describe(x=a.x, output=y)
    y = y.double()
    assert_close(y.mean(-1), torch.zeros(a.x.shape[:-1], dtype=torch.float64), name="row mean of the output",
                 example=example, atol=1e-4,
                 hint="Rows of the output do not have mean 0. Likely causes: the mean taken over another "
                      "dimension than the last, or not subtracted.")
    # variance 1 only where eps is small next to the row's own: a row whose values are close together comes
    # out with var_x / (var_x + eps)
    var, var_x = y.var(-1, unbiased=False), a.x.double().var(-1, unbiased=False)
    assert_close(var, var_x / (var_x + 1e-5), name="row variance of the output", example=example, atol=2e-3,
                 rtol=0,
                 hint="Rows of the output do not have variance 1. Likely causes: dividing by the variance instead "
                      "of its square root, or the variance taken over another dimension than the last.")
    # Normalising a row keeps the order of its values; an output that ignores x cannot. Compared as "y in x's
    # order never decreases", not as two argsorts: values of x a rounding apart may come out equal in y
    ranked = torch.gather(y, -1, torch.argsort(a.x.double(), dim=-1))
    assert_close(ranked, ranked.cummax(-1).values, name="output values in the order of x's", example=example,
                 atol=1e-6,
                 hint="The values of a row changed order. Likely causes: the output does not come from x "
                      "(a constant, or another row's values).")


def test_layer_norm_has_gamma_and_beta(student):
    m = student.new(LAYER_NORM, 6)
    expect_names(m, "LayerNorm", norm_shapes(6))
    state = m.state()
    assert_close(state["gamma"], torch.ones(6), name="gamma at initialisation",
                 hint="gamma does not start at ones. Likely causes: torch.randn or torch.empty instead of torch.ones.")
    assert_close(state["beta"], torch.zeros(6), name="beta at initialisation",
                 hint="beta does not start at zeros. Likely causes: torch.randn or torch.empty instead of "
                      "torch.zeros.")
    if not all(g for _, _, g in m.parameters().values()):
        raise Mismatch("gamma and beta should be trainable", expected="requires_grad=True",
                       got=str({n: g for n, (_, _, g) in m.parameters().items()}),
                       hint="A parameter has requires_grad=False. Likely causes: requires_grad=False passed to "
                            "nn.Parameter, or .requires_grad_(False) called on it.")


def test_layer_norm_default_eps_is_the_contracts(student):
    # rows of small variance (about 1e-6), where eps (the contract's 1e-5) decides the output
    x = s.tensor((2, 3, 6), 11, scale=1e-3)
    expected = torch.nn.LayerNorm(6)(x).detach()
    assert_close(student.new(LAYER_NORM, 6)(x), expected, name="LayerNorm(6) output with the default eps",
                 atol=1e-4, rtol=1e-4, example=describe(x=x, d_model=6),
                 hint="LayerNorm(d_model) without eps should add 1e-5, as torch.nn.LayerNorm does. Likely causes: "
                      "another default for eps in __init__ (the contract's is 1e-5), or a constant in place of "
                      "self.eps.")


@given(a=s.activations())
def test_layer_norm_applies_gamma_and_beta_per_feature(student, a):
    d = a.d_model
    gamma, beta = torch.linspace(-2, 3, d), s.tensor([d], a.seed + 3)
    plain = expect_tensor(student.new(LAYER_NORM, d)(a.x), name="LayerNorm output", shape=a.x.shape,
                          dtype=torch.float32)
    scaled = student.new(LAYER_NORM, d).load({"gamma": gamma, "beta": beta}, "LayerNorm")(a.x)
    # compared with the submission's own output without them (a bug of the normalisation is charged by the
    # other checks, once); shown: what torch.nn.LayerNorm gives with these gamma and beta
    truth = F.layer_norm(a.x, (d,), gamma, beta, eps=1e-5)
    assert_close(scaled, plain * gamma + beta, name="output with gamma and beta",
                 example=describe(x=a.x, gamma=gamma, beta=beta), atol=1e-4, truth=truth,
                 basis="your own LayerNorm output without gamma and beta, times gamma plus beta",
                 hint="gamma and beta are not applied per feature. Likely causes: gamma and beta swapped, "
                      "applied before normalising, or broadcast over another dimension than the last.")


@given(a=s.activations(), eps=s.eps)
def test_layer_norm_gradients_match_torch(student, a, eps):
    grad_out = s.tensor(a.x.shape, a.seed + 5)
    x = a.x.clone().requires_grad_(True)
    ref = torch.nn.LayerNorm(a.d_model, eps=eps)
    (ref(x) * grad_out).sum().backward()
    m = student.new(LAYER_NORM, a.d_model, eps=eps)
    _, (gx,), params = m.backward(a.x, grad_output=grad_out)
    example = describe(x=a.x, eps=eps)
    hint = ("The gradients differ from torch.nn.LayerNorm's. Likely causes: part of the computation cut from "
            "the graph (.detach(), .item(), .data), or a forward that differs (see layer_norm_matches_torch).")
    assert_close(gx, x.grad, name="gradient with respect to x", example=example, atol=1e-4, hint=hint)
    for name, expected in (("gamma", ref.weight.grad), ("beta", ref.bias.grad)):
        assert_close((params or {}).get(name), expected, name=f"gradient of {name}", example=example, atol=1e-4,
                     hint=hint)


# PositionwiseFeedForward -----------------------------------------------------------------

@given(a=s.sequences(), d_ff=s.d_ff)
def test_feed_forward_matches_torch(student, a, d_ff):
    w = ff_weights(a.d_model, d_ff, a.seed)
    m = student.new(FEED_FORWARD, a.d_model, d_ff).load(w, "PositionwiseFeedForward").eval()
    assert_close(m(a.x), feed_forward(a.x, w), name="PositionwiseFeedForward output",
                 example=carrying(describe(x=a.x, d_ff=d_ff), seed=a.seed),  # the weights' seed, for --repro
                 hint="The output differs from linear2(relu(linear1(x))). Likely causes: a missing or misplaced ReLU, "
                      "linear1 and linear2 swapped, or dropout active in eval() mode.")


def test_feed_forward_matches_stored_reference(student):
    check_stored(student, "assignment1", "feed_forward")


def test_feed_forward_has_named_layers(student):
    expect_names(student.new(FEED_FORWARD, 4, 10), "PositionwiseFeedForward", ff_shapes(4, 10),
                 example=describe(d_model=4, d_ff=10))


@given(a=s.sequences())
def test_feed_forward_dropout_is_inactive_in_eval(student, a):
    w = ff_weights(a.d_model, D_FF, a.seed)
    m = student.new(FEED_FORWARD, a.d_model, D_FF, dropout=0.9).load(w, "PositionwiseFeedForward")
    check_dropout_inactive_in_eval(m, (a.x,), feed_forward(a.x, w), component="PositionwiseFeedForward",
                                   uses="to relu(linear1(x))", example=describe(x=a.x, d_ff=D_FF))


@given(a=s.sequences())
def test_feed_forward_dropout_sits_where_the_docstring_says(student, a):
    w = ff_weights(a.d_model, D_FF, a.seed)
    m = student.new(FEED_FORWARD, a.d_model, D_FF, dropout=1.0).load(w, "PositionwiseFeedForward")
    check_dropout_placement(m, (a.x,), w["linear2.bias"].expand(a.x.shape).clone(), component="PositionwiseFeedForward",
                            placement="linear2.bias at every position (linear2 of all-zero hidden activations)",
                            causes="dropout applied after linear2 (the output is then 0) or to x before linear1, "
                                   "instead of to the hidden activations relu(linear1(x)).",
                            example=describe(x=a.x, d_ff=D_FF, linear2_bias=w["linear2.bias"]))


@given(a=s.sequences(), data=st.data())
def test_feed_forward_treats_positions_independently(student, a, data):
    B, T, d = a.x.shape
    t = data.draw(st.integers(0, T - 1), label="changed position")
    m = student.new(FEED_FORWARD, d, D_FF, dropout=0.0).load(ff_weights(d, D_FF, a.seed),
                                                             "PositionwiseFeedForward").eval()
    changed = perturb(a.x, (slice(None), t), a.seed + 7)
    before = expect_tensor(m(a.x), name="PositionwiseFeedForward output", shape=a.x.shape)
    after = m(changed)
    others = torch.ones(T, dtype=torch.bool)
    others[t] = False
    example = describe(x=a.x, changed_x=changed, changed_position=t)
    assert_close(after[:, others], before[:, others], basis=BEFORE, name="outputs at the positions that did not change",
                 example=example,
                 hint="Changing one position changed the output at others. Likely causes: mixing positions (a "
                      "layer over the time dimension, a reshape that interleaves positions, a mean over T).")
    expect_changed(before[:, t], after[:, t], name="the output at the changed position", example=example,
                   hint="The output ignores its input. Likely causes: forward returns a constant or the bias only.")


def test_feed_forward_gradients_reach_every_parameter(student):
    x = s.tensor([2, 3, 8], 0)
    m = student.new(FEED_FORWARD, 8, D_FF, dropout=0.0)
    _, (gx,), grads = m.backward(x, grad_output=s.tensor([2, 3, 8], 1))
    expect_gradients(m, grads, component="PositionwiseFeedForward", example=describe(x=x, d_ff=D_FF))
    expect_tensor(gx, name="gradient with respect to x", shape=x.shape)


# PositionalEncoding ----------------------------------------------------------------------

@given(d=s.odd_or_even_d_model, max_len=st.integers(1, 300))
def test_positional_encoding_matches_formula(student, d, max_len):
    pe = student.new(POSITIONAL_ENCODING, d, max_len=max_len).attr("pe")
    expected = pe_formula(max_len, d)
    expect_tensor(pe, name="the pe buffer", shape=(max_len, d), example=describe(d_model=d, max_len=max_len),
                  hint="Register a (max_len, d_model) table named pe.")
    assert_close(pe.double(), expected, name="pe", atol=pe_tolerance(max_len, d), rtol=0,
                 example=describe(d_model=d, max_len=max_len),
                 hint=Hint("pe[p, 2i] = sin(p / 10000^(2i/d_model)), pe[p, 2i+1] = cos(same angle).", axes="TC"))


def test_positional_encoding_pe_is_a_buffer(student):
    m = student.new(POSITIONAL_ENCODING, 8, max_len=20)
    if "pe" in m.parameters():
        raise Mismatch("pe should not be a Parameter", expected="a buffer", got="nn.Parameter pe",
                       hint="The encoding is fixed, not learned: self.register_buffer('pe', table).")
    # persistent or not: the contract asks for a buffer and leaves state_dict open, so both pass
    expect_names(m, "PositionalEncoding", {}, {"pe": (20, 8)})


def test_positional_encoding_moves_with_to(student):
    m = student.new(POSITIONAL_ENCODING, 6, max_len=10).to(torch.float64)
    pe = expect_tensor(m.attr("pe"), name="pe after .to(torch.float64)", shape=(10, 6),
                       dtype=torch.float64, hint="Register pe as a buffer so that .to() converts it.")
    assert_close(pe, pe_formula(10, 6), name="pe after .to(torch.float64)", atol=pe_tolerance(10, 6), rtol=0)


@given(a=s.sequences(d=s.odd_or_even_d_model))
def test_positional_encoding_adds_pe_to_input(student, a):
    B, T, d = a.x.shape
    out = student.new(POSITIONAL_ENCODING, d, max_len=T + 3).eval()(a.x)
    expected = a.x.double() + pe_formula(T, d)
    assert_close(out, expected.float(), name="PositionalEncoding output", atol=1e-5, example=describe(x=a.x),
                 hint="forward(x) = dropout(x + pe[:T]) for x of shape (B, T, d_model).")


@given(d=s.d_model, max_len=st.integers(1, 20), extra=st.integers(1, 5))
def test_positional_encoding_rejects_sequences_longer_than_max_len(student, d, max_len, extra):
    T = max_len + extra
    x = torch.zeros(1, T, d)
    m = student.new(POSITIONAL_ENCODING, d, max_len=max_len)
    expect_error(lambda: m(x), kind="ValueError", names=[T, max_len],
                 example=describe(x=x, max_len=max_len),
                 hint=f"Raise ValueError with a message naming T ({T}) and max_len ({max_len}).")


def test_positional_encoding_dropout_is_inactive_in_eval(student):
    x = s.tensor([2, 9, 8], 3)
    m = student.new(POSITIONAL_ENCODING, 8, max_len=16, dropout=0.9)
    check_dropout_inactive_in_eval(m, (x,), (x.double() + pe_formula(9, 8)).float(), component="PositionalEncoding",
                                   uses="to x + pe[:T]", example=describe(x=x, max_len=16))


def test_positional_encoding_dropout_sits_where_the_docstring_says(student):
    x = s.tensor([2, 9, 8], 4)
    m = student.new(POSITIONAL_ENCODING, 8, max_len=16, dropout=1.0)
    check_dropout_placement(m, (x,), torch.zeros_like(x), component="PositionalEncoding",
                            in_eval=(x.double() + pe_formula(9, 8)).float(),
                            placement="all zeros (dropout(x + pe[:T]) drops every value)",
                            causes="no dropout in forward, or dropout applied to x or to pe alone before the sum.",
                            example=describe(x=x, max_len=16))


def test_positional_encoding_matches_stored_reference(student):
    # the module as the student builds it: the case's state is the reference's pe table, and loading
    # it (check_stored) would replace the very thing checked: the check could not fail (grade adequacy)
    for c in examples(student, "assignment1", "positional_encoding"):  # a fresh draw too, where the reference is
        with draws.tagged(bool(c.get("fresh"))):
            m = student.new(c["target"], *c["args"], **c["kwargs"]).eval()
            assert_close(m(*c["inputs"]), c["output"], name="PositionalEncoding output", atol=1e-5,
                         example=describe(x=c["inputs"][0], d_model=c["args"][0], **c["kwargs"]),
                         hint=(FRESH_HINT if c.get("fresh") else "")
                         + "The output on this fixed case differs from the reference's: see the pe table's checks.")


# TokenEmbedding --------------------------------------------------------------------------

@given(batch=s.token_batches(), d=s.d_model, seed=s.seeds)
def test_token_embedding_matches_torch(student, batch, d, seed):
    vocab, x = batch
    w = s.tensor([vocab, d], seed)
    m = student.new(TOKEN_EMBEDDING, vocab, d).load({"embedding.weight": w}, "TokenEmbedding")
    assert_close(m(x), F.embedding(x, w) * math.sqrt(d), name="TokenEmbedding output",
                 example=carrying(describe(tokens=x, vocab_size=vocab, d_model=d), seed=seed),
                 hint="embedding(x) * sqrt(d_model).")


@given(d=s.d_model)
def test_token_embedding_scales_by_sqrt_d_model(student, d):
    w = torch.ones(5, d)
    out = student.new(TOKEN_EMBEDDING, 5, d).load({"embedding.weight": w}, "TokenEmbedding")(torch.tensor([[0, 3]]))
    assert_close(out, torch.full((1, 2, d), math.sqrt(d)), name="output for an all-ones embedding table",
                 example=describe(d_model=d), hint=f"Multiply by sqrt(d_model) = {math.sqrt(d):.4g}.")


@given(batch=s.token_batches(), d=s.d_model, data=st.data())
def test_token_embedding_padding_row_is_zero(student, batch, d, data):
    vocab, x = batch
    pad = data.draw(st.integers(0, vocab - 1), label="padding_idx")
    x = x.clone()
    x[0, 0] = pad
    out = expect_tensor(student.new(TOKEN_EMBEDDING, vocab, d, padding_idx=pad)(x), name="TokenEmbedding output",
                        shape=(*x.shape, d), dtype=torch.float32)
    example = describe(tokens=x, padding_idx=pad)
    at_pad = x == pad
    assert_close(out[at_pad], torch.zeros(int(at_pad.sum()), d), name="embedding of the padding token",
                 example=example, atol=0, rtol=0, hint="Pass padding_idx to nn.Embedding.")
    if bool((out[~at_pad].abs().sum(-1) == 0).any()):
        raise Mismatch("only the padding token should embed to zeros", expected="non-zero vectors elsewhere",
                       got="a zero vector for a real token", example=example)


def test_token_embedding_has_named_embedding(student):
    expect_names(student.new(TOKEN_EMBEDDING, 9, 4), "TokenEmbedding", {"embedding.weight": (9, 4)},
                 example=describe(vocab_size=9, d_model=4))


def test_token_embedding_matches_stored_reference(student):
    check_stored(student, "assignment1", "token_embedding")


# TransformerEmbedding --------------------------------------------------------------------

@given(batch=s.token_batches(), d=s.odd_or_even_d_model, seed=s.seeds)
def test_transformer_embedding_matches_its_parts(student, batch, d, seed):
    vocab, x = batch
    w = s.tensor([vocab, d], seed)
    m = student.new(TRANSFORMER_EMBEDDING, vocab, d, max_len=10, dropout=0.0).load({"token.embedding.weight": w},
                                                                 "TransformerEmbedding").eval()
    expected = F.embedding(x, w).double() * math.sqrt(d) + pe_formula(x.shape[1], d)
    assert_close(m(x), expected.float(), name="TransformerEmbedding output", atol=1e-4,
                 example=describe(tokens=x, d_model=d), hint="position(token(x)).")


def test_transformer_embedding_passes_padding_idx_to_its_token_embedding(student):
    # a setting made at construction: checked as built, before any weights are loaded over it
    pad, d = 2, 4
    x = torch.tensor([[2, 0, 5, 2], [1, 2, 3, 6]])
    m = student.new(TRANSFORMER_EMBEDDING, 7, d, max_len=10, dropout=0.0, padding_idx=pad).eval()
    example = describe(tokens=x, vocab_size=7, d_model=d, max_len=10, padding_idx=pad)
    token = expect_tensor(m.attr("token")(x), name="self.token(tokens), as built", shape=(2, 4, d),
                          dtype=torch.float32, example=example)
    at_pad = x == pad
    assert_close(token[at_pad], torch.zeros(int(at_pad.sum()), d), atol=0, rtol=0, example=example,
                 name="self.token's embedding of padding_idx, as built",
                 hint="Build the token embedding with the padding_idx given: TokenEmbedding(vocab_size, d_model, "
                      "padding_idx).")
    if bool((token[~at_pad].abs().sum(-1) == 0).any()):
        raise Mismatch("only the padding token should embed to zeros", expected="non-zero vectors elsewhere",
                       got="a zero vector for a real token", example=example,
                       hint="Pass the padding_idx given on, not a fixed one: TokenEmbedding(vocab_size, d_model, "
                            "padding_idx).")


def test_transformer_embedding_has_named_parts(student):
    expect_names(student.new(TRANSFORMER_EMBEDDING, 7, 4, max_len=12), "TransformerEmbedding",
                 {"token.embedding.weight": (7, 4)}, {"position.pe": (12, 4)},
                 example=describe(vocab_size=7, d_model=4, max_len=12))


def test_transformer_embedding_dropout_is_inactive_in_eval(student):
    x = torch.tensor([[1, 2, 3, 4, 5, 6]])
    w = s.tensor([8, 8], 2)
    m = student.new(TRANSFORMER_EMBEDDING, 8, 8, max_len=10, dropout=0.9).load({"token.embedding.weight": w},
                                                                               "TransformerEmbedding")
    check_dropout_inactive_in_eval(m, (x,), embed(w, x), component="TransformerEmbedding", atol=1e-4,
                                   uses="in the PositionalEncoding, PositionalEncoding(d_model, max_len, dropout)",
                                   example=describe(tokens=x, vocab_size=8, d_model=8))


def test_transformer_embedding_dropout_sits_where_the_docstring_says(student):
    x = torch.tensor([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]])
    w = s.tensor([8, 8], 5)
    m = student.new(TRANSFORMER_EMBEDDING, 8, 8, max_len=10, dropout=1.0).load({"token.embedding.weight": w},
                                                                               "TransformerEmbedding")
    check_dropout_placement(m, (x,), torch.zeros(2, 6, 8), component="TransformerEmbedding", in_eval=embed(w, x),
                            atol=1e-4,
                            placement="all zeros (the PositionalEncoding's dropout drops every value of the sum)",
                            causes="the dropout argument not passed on to PositionalEncoding(d_model, max_len, "
                                   "dropout) (its own default is 0.0), or the output built without self.position.",
                            example=describe(tokens=x, vocab_size=8, d_model=8))


def test_transformer_embedding_matches_stored_reference(student):
    check_stored(student, "assignment1", "transformer_embedding")


# device placement: each component on PyTorch's meta device (tests/grading/helpers/device.py) ----------

def test_layer_norm_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment1", "layer_norm")), component="LayerNorm")


def test_feed_forward_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment1", "feed_forward")),
                           component="PositionwiseFeedForward")


def test_positional_encoding_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment1", "positional_encoding")),
                           component="PositionalEncoding")


def test_token_embedding_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment1", "token_embedding")), component="TokenEmbedding")


def test_transformer_embedding_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment1", "transformer_embedding")),
                           component="TransformerEmbedding")
