"""Assignment 2, public tier: scaled dot-product attention, masks, multi-head attention.

Compared with PyTorch's own attention (`F.scaled_dot_product_attention`,
`nn.MultiheadAttention`) and with stored reference outputs; plus the properties any
correct implementation has, each with a check that trivial outputs (zeros, uniform
weights) fail.
"""

import math

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.pattern import Hint
from grader.sandbox.host import StudentError
from grader.suite import draws
from grader.suite.checks import Found, Mismatch, describe, expect_error, expect_tensor
from grader.suite.example import carrying
from tests import strategies as s
from tests.grading.helpers.attention import SDPA_HINT, call_sdpa, one_head_expected, one_head_weights
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
from tests.grading.helpers.device import HALF_HINT, Case, check_device_placement, stored_case
from tests.grading.helpers.names import CAUSAL_MASK, MHA, PAD_MASK, SDPA, TGT_MASK, causal, mha_shapes
from tests.grading.helpers.oracles import attention, graded_rows, mha_weights, torch_mha
from tests.grading.support import FRESH_HINT, check_stored, examples, stored


def new_mha(student, d, h, w, **kwargs):
    return student.new(MHA, d, h, **kwargs).load(w, "MultiHeadAttention").eval()


# scaled_dot_product_attention ------------------------------------------------------------

@given(a=s.attention_inputs())
def test_sdpa_matches_torch(student, a):
    example = describe(q=a.q, k=a.k, v=a.v, mask=a.mask)
    out, w = call_sdpa(student, a.q, a.k, a.v, a.mask, example=example)
    _, exp_w = attention(a.q, a.k, a.v, a.mask)
    exp_out = F.scaled_dot_product_attention(a.q.double(), a.k.double(), a.v.double(), attn_mask=a.mask)
    rows = graded_rows(a.mask, w.shape)
    assert_close(w, exp_w.float(), name="attention weights", example=example, atol=1e-5,
                 mask=rows[..., None].expand(w.shape), hint=SDPA_HINT)
    assert_close(out, exp_out.float(), name="attention output", example=example, atol=1e-5,
                 mask=rows[..., None].expand(out.shape), hint=SDPA_HINT)


def test_sdpa_matches_stored_reference(student):
    for case in ("sdpa", "sdpa_masked"):
        for c in examples(student, "assignment2", case):  # a fresh draw too, where the reference is at hand
            q, k, v, mask = c["inputs"]
            example = describe(q=q, k=k, v=v, mask=mask)
            hint = FRESH_HINT + SDPA_HINT if c.get("fresh") else SDPA_HINT
            with draws.tagged(bool(c.get("fresh"))):
                out, w = call_sdpa(student, q, k, v, mask, example=example)
                assert_close(out, c["output"][0], name="attention output", example=example, hint=hint)
                assert_close(w, c["output"][1], name="attention weights", example=example, hint=hint)


@given(a=s.attention_inputs())
def test_sdpa_weights_rows_sum_to_one(student, a):
    example = describe(q=a.q, k=a.k, mask=a.mask)
    _, w = call_sdpa(student, a.q, a.k, a.v, a.mask, example=example)
    rows = graded_rows(a.mask, w.shape)
    sums = w.double().sum(-1)
    assert_close(sums, torch.ones_like(sums), name="sum of each row of weights", example=example, atol=1e-5,
                 mask=rows, hint="Rows of weights do not sum to 1. Likely causes: the softmax taken over another "
                                    "dimension than the last (the keys), or weights rescaled after it.")
    if bool((w < 0).any()):
        raise Mismatch("attention weights should not be negative", expected="weights >= 0",
                       got=f"a weight of {float(w.min()):.4g}", example=example, hint=SDPA_HINT)
    # and the weights follow the scores: in every graded row the best-scoring key gets the most weight
    _, exp_w = attention(a.q, a.k, a.v, a.mask)
    best = exp_w.nan_to_num(-1.0).argmax(-1)
    got_best = w.gather(-1, best[..., None])[..., 0]
    assert_close(got_best, w.max(-1).values, name="weight of the best-scoring key (the row's largest weight)",
                 example=example, mask=rows, atol=1e-6,
                 hint="The best-scoring key does not get the largest weight. Likely causes: scores from k @ q^T "
                      "instead of q @ k^T, a sign error, or the softmax over the wrong dimension.")


@given(a=s.attention_inputs(masked=st.just(True)))
def test_sdpa_blocked_keys_get_zero_weight(student, a):
    example = describe(q=a.q, k=a.k, mask=a.mask)
    _, w = call_sdpa(student, a.q, a.k, a.v, a.mask, example=example)
    mask = a.mask.expand(w.shape)
    rows = graded_rows(a.mask, w.shape)[..., None].expand(w.shape)
    assert_close(w, torch.zeros_like(w), name="weights of blocked keys", example=example, atol=0, rtol=0,
                 mask=rows & ~mask,
                 hint=Hint("A blocked key got a weight other than exactly 0. Likely causes: the mask applied after "
                           "the softmax, a finite fill value that is not very negative (use "
                           "torch.finfo(scores.dtype).min), or the mask's polarity inverted (True means 'may "
                           "attend').", "everywhere"))
    if bool((w[rows & mask] <= 0).any()):
        raise Mismatch("visible keys should get a positive weight", expected="weights > 0 where mask is True",
                       got="a zero or negative weight on a visible key", example=example,
                       hint="A key the mask allows got weight 0. Likely causes: the mask's polarity inverted (True "
                            "means 'may attend'), or dropout applied without being asked for.")


def test_sdpa_fully_blocked_row_stays_finite(student):
    for seed, (lead, t_q, t_k, dk) in enumerate([((2,), 3, 4, 4), ((1, 2), 4, 3, 2), ((), 2, 5, 8)]):
        q, k, v = (s.tensor([*lead, t_q, dk], seed), s.tensor([*lead, t_k, dk], seed + 1),
                   s.tensor([*lead, t_k, 3], seed + 2))
        mask = torch.rand(*lead, t_q, t_k, generator=torch.Generator().manual_seed(draws.seed(seed))) < 0.7
        mask[..., 0, :] = False  # the first query may see nothing
        mask[..., 1, 0] = True  # the second sees at least one key
        example = describe(q=q, k=k, v=v, mask=mask)
        out, w = call_sdpa(student, q, k, v, mask, example=example)
        for name, t in (("out", out), ("weights", w)):
            if not bool(torch.isfinite(t).all()):
                raise Mismatch(f"{name} has NaN or inf where a query's keys are all blocked",
                               expected="finite values everywhere", got=f"non-finite values in {name}",
                               example=example,
                               hint="A row whose keys are all blocked became NaN or inf. Likely causes: blocked scores "
                                    "filled with -inf (the softmax of an all -inf row is NaN) and not cleaned up "
                                    "afterwards; torch.finfo(scores.dtype).min, or nan_to_num after the softmax, "
                                    "keep it finite.")
        exp_out, exp_w = attention(q, k, v, mask)
        rows = graded_rows(mask, w.shape)[..., None]
        assert_close(w, exp_w.float(), name="weights of the rows with a visible key", example=example,
                     mask=rows.expand(w.shape), hint=SDPA_HINT)
        assert_close(out, exp_out.float(), name="output of the rows with a visible key", example=example,
                     mask=rows.expand(out.shape), hint=SDPA_HINT)


@given(dk=s.d_k, t_q=s.length, t_k=st.integers(2, 7), seed=s.seeds)
def test_sdpa_scales_scores_by_sqrt_d_k(student, dk, t_q, t_k, seed):
    q, k, v = s.tensor([2, t_q, dk], seed, 1.5), s.tensor([2, t_k, dk], seed + 1, 1.5), s.tensor([2, t_k, 3], seed)
    example = describe(q=q, k=k, d_k=dk)
    _, w = call_sdpa(student, q, k, v, example=example)
    # softmax is shift-invariant: log(w_j / w_0) recovers the scores' differences, and so their scale
    got = w.double().log() - w.double()[..., :1].log()
    raw = q.double() @ k.double().transpose(-2, -1)
    raw = raw - raw[..., :1]
    fitted = float((got.nan_to_num(0, 0, 0) * raw).sum() / (raw * raw).sum())
    assert_close(got.float(), (raw / math.sqrt(dk)).float(), name="score differences log(w_j / w_0)",
                 example=example, atol=2e-3, rtol=2e-3,
                 hint=f"Scores are q @ k^T / sqrt(d_k) = q @ k^T * {1 / math.sqrt(dk):.4g} here; yours look like "
                      f"q @ k^T * {fitted:.4g}. Divide by sqrt(d_k), the size of the last dimension of q.")


@given(a=s.attention_inputs())
def test_sdpa_output_is_a_convex_combination_of_values(student, a):
    v = a.v + 3.0  # values far from 0: an all-zero output cannot pass
    example = describe(q=a.q, k=a.k, v=v, mask=a.mask)
    out, w = call_sdpa(student, a.q, a.k, v, a.mask, example=example)
    rows = graded_rows(a.mask, w.shape)
    sums = w.double().sum(-1)
    assert_close(sums, torch.ones_like(sums), name="sum of each row of weights", example=example, atol=1e-5,
                 mask=rows,
                 hint="Rows of weights do not sum to 1. Likely causes: the softmax over another dimension than "
                      "the keys, or weights rescaled after it.")
    mixed = (w.double() @ v.double()).float()
    assert_close(out, mixed, name="out compared with weights @ v", example=example, atol=1e-5,
                 mask=rows[..., None].expand(out.shape),
                 hint="out is not the returned weights @ v. Likely causes: v multiplied by other weights than "
                      "the ones returned, or k used instead of v.")
    visible = (a.mask if a.mask is not None else torch.ones(1, dtype=torch.bool)).expand(w.shape)[..., None]
    vv = v.double()[..., None, :, :].expand(*w.shape, v.shape[-1])
    low = torch.where(visible, vv, torch.inf).min(-2).values
    high = torch.where(visible, vv, -torch.inf).max(-2).values
    inside = (out.double() >= low - 1e-5) & (out.double() <= high + 1e-5)
    inside = inside | ~rows[..., None]
    if not bool(inside.all()):
        i = tuple(int(j) for j in torch.nonzero(~inside)[0])
        raise Mismatch("each output should lie between the smallest and largest visible value",
                       expected=f"a value in [{float(low[i]):.4g}, {float(high[i]):.4g}] at index {list(i)}",
                       got=f"{float(out[i]):.4g}", example=example,
                       hint="An output lies outside the range of the visible values. Likely causes: weights that are "
                            "negative or do not sum to 1, or masked values mixed in.")


def test_sdpa_masks_in_half_precision(student):
    """float16 on the CPU, compared with the submission's own float32 answer: only what half precision
    changes can fail here (a fill such as -1e9, which float16 cannot hold: masked_fill refuses it)."""
    q, k, v = s.tensor([2, 4, 8], 11), s.tensor([2, 5, 8], 12), s.tensor([2, 5, 3], 13)
    mask = torch.tensor([[True, True, False, True, False]])  # every query sees a key
    example = describe(q=q.half(), k=k.half(), v=v.half(), mask=mask)
    want, _ = call_sdpa(student, q, k, v, mask, example=example)
    try:
        got = student.call(SDPA, q.half(), k.half(), v.half(), mask)
    except StudentError as e:
        if e.not_attempted:
            raise
        raise Mismatch(f"attention raises {e.type} in float16: {e.message}"[:200], got=f"{e.type}: {e.message}"[:300],
                       expected="the float32 result, to float16's precision", example=example, hint=HALF_HINT,
                       found=Found(where="\n".join(e.where))) from None
    out = got[0] if type(got) is tuple and got else got
    out = expect_tensor(out, name="out in float16", shape=want.shape, example=example, hint=HALF_HINT)
    if not bool(torch.isfinite(out.float()).all()):
        raise Mismatch("attention in float16 returns NaN or inf", expected="finite values", got="NaN or inf",
                       example=example, hint=HALF_HINT)
    assert_close(out.float(), want, name="out in float16 compared with your float32 out", example=example,
                 atol=0.02 * max(1.0, float(want.abs().max())), rtol=0.02, hint=HALF_HINT)


def test_sdpa_applies_dropout_to_the_weights(student):
    q, k, v = s.tensor([2, 6, 4], 1), s.tensor([2, 7, 4], 2), s.tensor([2, 7, 5], 3, offset=1.0)
    example = describe(q=q, k=k, v=v, dropout="nn.Dropout(0.5)")
    clean_out, clean_w = call_sdpa(student, q, k, v, example=example)
    drop = student.new("torch.nn:Dropout", 0.5)
    out, w = call_sdpa(student, q, k, v, dropout=drop.eval(), example=example)
    assert_close(out, clean_out, name="output with dropout in eval() mode", example=example,
                 hint="An nn.Dropout in eval() mode changed the output. Likely causes: dropout applied by hand or "
                      "with F.dropout(..., training=True) instead of calling the module you are given.")
    out, w = call_sdpa(student, q, k, v, dropout=drop.train(), seed=1, example=example)
    expect_changed(clean_out, out, name="the output with nn.Dropout(0.5) in train() mode", example=example,
                   hint="The dropout module you are given had no effect. Likely causes: the dropout argument is "
                        "ignored; it applies to the weights, before they multiply v.")
    # Whatever the random draw: dropout on the output (or on weights @ v) leaves every output value either
    # 0 or twice the clean one; dropout on the weights mixes the kept values of a row into new numbers.
    scaled = (out == 0) | torch.isclose(out, clean_out * 2, atol=1e-6)
    if bool(scaled.all()):
        raise Mismatch("dropout should act on the weights, not on the output", got="every output value is 0 or "
                       "2x the clean output (an elementwise dropout of the output)",
                       expected="outputs mixed from the kept weights of each row", example=example,
                       hint="Likely causes: dropout applied to weights @ v instead of to the weights: "
                            "weights = dropout(softmax(scores)), out = weights @ v.")
    if not torch.allclose(w, clean_w):
        # the weights returned are the dropped-out ones: they must be what multiplied v
        kept = (w == 0) | torch.isclose(w, clean_w * 2, atol=1e-6)
        if not bool(kept.all()):
            raise Mismatch("dropout should zero some weights and scale the others by 1/(1-p)",
                           expected="each weight either 0 or 2x the clean weight", got="other values",
                           example=example,
                           hint="The weights returned are neither the clean ones nor a dropout of them. Likely "
                                "causes: dropout applied before the softmax, or the weights renormalised after it.")
        assert_close(out, (w.double() @ v.double()).float(), name="output compared with the returned weights @ v",
                     example=example,
                     hint="The output is not the returned weights @ v. Likely causes: v multiplied by other weights "
                          "than the ones returned (e.g. a second, separate dropout draw).")


def test_sdpa_dropout_sits_where_the_docstring_says(student):
    q, k, v = s.tensor([2, 6, 4], 4), s.tensor([2, 7, 4], 5), s.tensor([2, 7, 5], 6, offset=1.0)
    example = describe(q=q, k=k, v=v, dropout="nn.Dropout(1.0), train() mode")
    clean_out, clean_w = attention(q, k, v)
    # the same dropout module in eval() mode does nothing: an attention that always answers zeros fails here
    resting, _ = call_sdpa(student, q, k, v, dropout=student.new("torch.nn:Dropout", 1.0).eval(), example=example)
    assert_close(resting, clean_out.float(), name="attention output with nn.Dropout(1.0) in eval() mode",
                 example=example, atol=1e-5,
                 hint="A dropout module in eval() mode does nothing, so this should equal the output without "
                      "dropout, and it differs. Likely causes: an error unrelated to dropout (see the other checks).")
    out, w = call_sdpa(student, q, k, v, dropout=student.new("torch.nn:Dropout", 1.0).train(), seed=1,
                       example=example)
    assert_close(out, torch.zeros_like(out), name="attention output with nn.Dropout(1.0) in train() mode",
                 example=example,
                 hint="With dropout=1.0 every weight is dropped, so weights @ v is all zeros, and yours is not. "
                      "Likely causes: dropout applied to the scores before the softmax (the weights then become "
                      "uniform) or to q or k, instead of to the softmax weights.")
    # the weights returned may be taken before dropout (the clean softmax) or after it (all zeros)
    if not (bool((w == 0).all()) or torch.allclose(w.double(), clean_w, atol=1e-5)):
        raise Mismatch("with nn.Dropout(1.0) the returned weights should be all 0 (after dropout) or the clean "
                       "softmax weights (before it)", expected="zeros or softmax(q @ k^T / sqrt(d_k))",
                       got=describe(weights=w), example=example,
                       hint="Likely causes: dropout applied to the scores before the softmax.")


# masks -----------------------------------------------------------------------------------

@given(p=s.padded_tokens())
def test_pad_mask_matches_definition(student, p):
    B, T = p.tokens.shape
    example = describe(tokens=p.tokens, pad_idx=p.pad_idx)
    got = expect_tensor(student.call(PAD_MASK, p.tokens, p.pad_idx), name="make_pad_mask's mask", shape=(B, 1, 1, T),
                        dtype=torch.bool, example=example,
                        hint="(tokens != pad_idx)[:, None, None, :] is a (B, 1, 1, T) torch.bool tensor.")
    assert_close(got, p.real[:, None, None, :], name="make_pad_mask's mask", example=example,
                 hint="The mask differs from tokens != pad_idx. Likely causes: the polarity inverted (True = "
                      "may attend, so True where the token is NOT padding).")


def test_pad_mask_matches_stored_reference(student):
    check_stored(student, "assignment2", "pad_mask",
                 hint="Likely causes: the polarity inverted (True where the token is not pad_idx).")


def test_causal_mask_is_lower_triangular(student):
    for T in range(1, 9):
        got = expect_tensor(student.call(CAUSAL_MASK, T), name=f"make_causal_mask({T})", shape=(1, 1, T, T),
                            dtype=torch.bool, example=describe(T=T),
                            hint="A (1, 1, T, T) torch.bool tensor.")
        assert_close(got, causal(T)[None, None], name=f"make_causal_mask({T})",
                     example=describe(T=T),
                     hint=Hint("The mask is not lower-triangular with its diagonal. Likely causes: tril(-1) or triu "
                               "instead of tril(); mask[0, 0, i, j] = j <= i.", "diagonal", "scattered", "everywhere"))


def test_causal_mask_accepts_a_device(student):
    got = student.call(CAUSAL_MASK, 3, kwargs={"device": "cpu"})
    assert_close(got, torch.ones(3, 3, dtype=torch.bool).tril()[None, None], name="make_causal_mask(3, device='cpu')",
                 hint="make_causal_mask(3, device='cpu') failed or differs. Likely causes: no device "
                      "argument, or it is not passed to the tensor constructor (torch.ones(..., device=device)).")


def test_causal_mask_matches_stored_reference(student):
    check_stored(student, "assignment2", "causal_mask")


@given(p=s.padded_tokens())
def test_tgt_mask_matches_definition(student, p):
    B, T = p.tokens.shape
    example = describe(tgt=p.tokens, pad_idx=p.pad_idx)
    got = expect_tensor(student.call(TGT_MASK, p.tokens, p.pad_idx), name="make_tgt_mask's mask", shape=(B, 1, T, T),
                        dtype=torch.bool, example=example,
                        hint="pad (B, 1, 1, T) & causal (1, 1, T, T) -> (B, 1, T, T).")
    expected = p.real[:, None, None, :] & causal(T)
    assert_close(got, expected, name="make_tgt_mask's mask", example=example,
                 hint=Hint("The mask differs from causal AND not padding. Likely causes: | instead of &, the "
                           "padding applied to queries instead of keys, or a part that fails its own checks.",
                           "above_diagonal", "below_diagonal", "scattered", "everywhere", "some_batch"))


def test_tgt_mask_matches_stored_reference(student):
    check_stored(student, "assignment2", "tgt_mask")


# MultiHeadAttention ----------------------------------------------------------------------

@given(dh=s.heads, keys=s.padded_tokens(), t_q=s.length, seed=s.seeds)
def test_mha_matches_torch(student, dh, keys, t_q, seed):
    d, h = dh
    B, T_k = keys.tokens.shape
    q, k, v = s.tensor([B, t_q, d], seed), s.tensor([B, T_k, d], seed + 1), s.tensor([B, T_k, d], seed + 2)
    mask = keys.real[:, None, None, :]
    w = mha_weights(d, seed)
    expected, exp_weights = torch_mha(w, d, h, q, k, v, key_padding=~keys.real)
    m = new_mha(student, d, h, w)
    example = carrying(describe(q=q, k=k, v=v, mask=mask, n_heads=h), seed=seed)  # the weights' seed, for --repro
    hint = ("Project with w_q, w_k, w_v, split into heads (view(B, T, h, d_k).transpose(1, 2)), attend, "
            "merge the heads back (transpose(1, 2).reshape(B, T_q, d_model)), then w_o.")
    assert_close(m(q, k, v, mask), expected, name="MultiHeadAttention output", example=example, atol=1e-4, hint=hint)
    assert_close(m.attr("attention_weights"), exp_weights, name="attention_weights", example=example, atol=1e-5,
                 hint="attention_weights differ from nn.MultiheadAttention's per-head weights. Likely causes: "
                      "weights averaged over heads, kept after dropout, or from a wrong head split.")


@given(dh=s.heads, B=s.batch, T=s.length, seed=s.seeds)
def test_mha_matches_torch_with_a_causal_mask(student, dh, B, T, seed):
    d, h = dh
    x = s.tensor([B, T, d], seed + 5)
    lower = causal(T)  # (T, T)
    w = mha_weights(d, seed)
    expected, _ = torch_mha(w, d, h, x, x, x, attn_mask=~lower)
    out = new_mha(student, d, h, w)(x, x, x, lower[None, None])
    assert_close(out, expected, name="MultiHeadAttention output",
                 example=carrying(describe(x=x, mask=lower[None, None]), n_heads=h, seed=seed),
                 atol=1e-4,
                 hint="With a causal mask the output differs from nn.MultiheadAttention's. Likely causes: the mask "
                      "not passed on to the attention, or reshaped so that it does not broadcast over the heads.")


def test_mha_matches_stored_reference(student):
    check_stored(student, "assignment2", "mha_cross", atol=1e-4)
    check_stored(student, "assignment2", "mha_self_causal", atol=1e-4)


def test_mha_has_named_layers(student):
    expect_names(student.new(MHA, 8, 2), "MultiHeadAttention", mha_shapes(8), example=describe(d_model=8, n_heads=2))


@given(dh=s.heads.filter(lambda dh: dh[1] > 1), data=st.data(), t_k=st.integers(2, 7), seed=s.seeds)
def test_mha_heads_use_contiguous_columns(student, dh, data, t_k, seed):
    d, h = dh
    d_k = d // h
    head = data.draw(st.integers(0, h - 1), label="the head with non-zero query/key weights")
    w = one_head_weights(d, h, head, seed)  # only head `head` sees non-zero queries and keys
    q, kv = s.tensor([2, 3, d], seed), s.tensor([2, t_k, d], seed + 1)
    expected = one_head_expected(w, h, head, q, kv)
    m = new_mha(student, d, h, w)
    example = carrying(describe(d_model=d, n_heads=h, head=head, q=q, kv=kv), seed=seed)
    out = m(q, kv, kv)
    assert_close(m.attr("attention_weights"), expected.float(), name="attention_weights", example=example,
                 atol=1e-5,
                 hint=f"Only columns {head * d_k}:{(head + 1) * d_k} of w_q and w_k are non-zero here, so only head "
                      f"{head} should have non-uniform weights. Head i uses columns i*d_k:(i+1)*d_k: split with "
                      "x.view(B, T, n_heads, d_k).transpose(1, 2), not view(B, n_heads, T, d_k).")
    expected_out, _ = torch_mha(w, d, h, q, kv, kv)
    assert_close(out, expected_out, name="MultiHeadAttention output", example=example, atol=1e-4,
                 hint="The output differs although the heads are right. Likely causes: heads merged without "
                      "transposing back: out.transpose(1, 2).reshape(B, T_q, d_model) before w_o.")


@given(dh=s.heads, keys=s.padded_tokens(), t_q=s.length, seed=s.seeds)
def test_mha_keeps_attention_weights(student, dh, keys, t_q, seed):
    d, h = dh
    B, T_k = keys.tokens.shape
    q, kv = s.tensor([B, t_q, d], seed), s.tensor([B, T_k, d], seed + 1)
    mask = keys.real[:, None, None, :]
    m = new_mha(student, d, h, mha_weights(d, seed))
    m(q, kv, kv, mask)
    example = carrying(describe(q=q, kv=kv, mask=mask, n_heads=h), seed=seed)
    w = expect_tensor(m.attr("attention_weights"), name="attention_weights", shape=(B, h, t_q, T_k),
                      dtype=torch.float32, example=example,
                      hint="After each forward keep self.attention_weights, shape (B, n_heads, T_q, T_k).")
    sums = w.double().sum(-1)
    assert_close(sums, torch.ones_like(sums), name="sum of each row of attention_weights", example=example,
                 atol=1e-5,
                 hint="Rows of attention_weights do not sum to 1. Likely causes: keeping the scores or the "
                      "dropped-out weights instead of the softmax weights.")
    blocked = (~mask).expand(w.shape)
    assert_close(w, torch.zeros_like(w), name="attention_weights of padded keys", example=example, atol=0, rtol=0,
                 mask=blocked,
                 hint="Padded keys got a weight other than 0. Likely causes: the mask not passed on to the "
                      "attention.")


def test_mha_rejects_d_model_not_divisible_by_n_heads(student):
    student.new(MHA, 8, 2)  # valid arguments build (a stub is "not attempted", not "raises the wrong error")
    for d, h in ((10, 4), (6, 4), (9, 2), (8, 3)):
        expect_error(lambda d=d, h=h: student.new(MHA, d, h), kind="ValueError", names=[d, h],
                     example=describe(d_model=d, n_heads=h),
                     hint=f"In __init__, raise ValueError when d_model % n_heads != 0, naming d_model ({d}) and "
                          f"n_heads ({h}) in the message.")


@given(dh=s.heads, B=s.batch, T=st.integers(2, 7), data=st.data(), seed=s.seeds)
def test_mha_causal_self_attention_does_not_leak(student, dh, B, T, data, seed):
    d, h = dh
    t = data.draw(st.integers(0, T - 2), label="last position kept")
    x = s.tensor([B, T, d], seed)
    changed = x.clone()
    changed[:, t + 1:] += s.tensor([B, T - t - 1, d], seed + 7)
    mask = causal(T)[None, None]  # (1, 1, T, T)
    m = new_mha(student, d, h, mha_weights(d, seed))
    before, after = m(x, x, x, mask), m(changed, changed, changed, mask)
    expect_tensor(before, name="MultiHeadAttention output", shape=(B, T, d))
    example = carrying(describe(x=x, mask=mask, changed_from_position=t + 1), changed=changed, n_heads=h, seed=seed)
    assert_close(after[:, :t + 1], before[:, :t + 1],
                 basis=BEFORE, name=f"outputs at positions 0..{t}", example=example,
                 hint=Hint("Changing inputs after position t changed outputs up to t, which a causal mask "
                           "forbids. Likely causes: the mask not passed to the attention, not broadcast over the "
                           "heads, or its polarity inverted (True = may attend).", "everywhere"))
    expect_changed(before[:, t + 1:], after[:, t + 1:], name="the outputs at the changed positions",
                   example=example, hint="The output ignores its input. Likely causes: forward returns a constant "
                                         "or the bias only.")


@given(dh=s.heads, B=st.integers(2, 3), T=s.length, seed=s.seeds)
def test_mha_batch_elements_are_independent(student, dh, B, T, seed):
    d, h = dh
    x = s.tensor([B, T, d], seed)
    changed = perturb(x, 0, seed + 9)
    m = new_mha(student, d, h, mha_weights(d, seed))
    before, after = m(x, x, x), m(changed, changed, changed)
    expect_tensor(before, name="MultiHeadAttention output", shape=(B, T, d))
    example = carrying(describe(x=x, changed_x=changed, changed_batch_element=0), n_heads=h, seed=seed)
    assert_close(after[1:], before[1:],
                 basis=BEFORE, name="outputs of the batch elements that did not change", example=example,
                 hint="Changing batch element 0 changed the others. Likely causes: heads split with "
                      "view(B * h, ...) or view(h, B, ...) so that batch elements mix; keep the batch dimension "
                      "first: view(B, T, h, d_k).transpose(1, 2).")
    expect_changed(before[0], after[0], name="the output of the changed batch element", example=example,
                   hint="The output ignores its input. Likely causes: forward returns a constant or the bias only.")


def test_mha_dropout_is_inactive_in_eval(student):
    q, kv = s.tensor([2, 5, 8], 1), s.tensor([2, 6, 8], 2)
    w = mha_weights(8, 3)
    m = student.new(MHA, 8, 2, dropout=0.9).load(w, "MultiHeadAttention")
    check_dropout_inactive_in_eval(m, (q, kv, kv), torch_mha(w, 8, 2, q, kv, kv)[0], component="MultiHeadAttention",
                                   uses="to the attention weights",
                                   example=carrying(describe(q=q, kv=kv, n_heads=2), seed=3),
                                   atol=1e-4)


def test_mha_dropout_sits_where_the_docstring_says(student):
    q, kv = s.tensor([2, 5, 8], 4), s.tensor([2, 6, 8], 5)
    w = mha_weights(8, 6)
    m = student.new(MHA, 8, 2, dropout=1.0).load(w, "MultiHeadAttention")
    check_dropout_placement(m, (q, kv, kv), w["w_o.bias"].expand(2, 5, 8).clone(), component="MultiHeadAttention",
                            placement="w_o.bias at every position (w_o of all-zero heads)",
                            causes="dropout applied to the output of w_o (the output is then 0) or not at all, "
                                   "instead of to the attention weights.",
                            example=carrying(describe(q=q, kv=kv, n_heads=2, w_o_bias=w["w_o.bias"]), seed=6))


def test_mha_gradients_reach_every_parameter(student):
    q, k, v = s.tensor([2, 3, 8], 0), s.tensor([2, 4, 8], 1), s.tensor([2, 4, 8], 2)
    m = student.new(MHA, 8, 2)
    example = describe(q=q, k=k, v=v, n_heads=2)
    _, grads_in, grads = m.backward(q, k, v, grad_output=s.tensor([2, 3, 8], 3), wrt=(0, 1, 2))
    expect_gradients(m, grads, component="MultiHeadAttention", example=example)
    for i, name in enumerate(("q", "k", "v")):
        g = (grads_in or [None] * 3)[i]
        if type(g) is not torch.Tensor or not bool((g != 0).any()):
            raise Mismatch(f"the gradient with respect to the input {name} is {'None' if g is None else 'all zeros'}",
                           expected="a gradient that is not all zeros", got="None" if g is None else "zeros",
                           example=example,
                           hint=f"Likely causes: the output does not depend on {name} (e.g. the same input projected "
                                "three times) or it is cut from the graph (.detach(), .data, torch.no_grad()).")




# device placement: each component on PyTorch's meta device (tests/grading/helpers/device.py) ----------

def test_sdpa_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment2", "sdpa_masked")),
                           component="scaled_dot_product_attention")


def test_pad_mask_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment2", "pad_mask")), component="make_pad_mask")


def test_causal_mask_is_built_on_the_given_device(student):
    check_device_placement(student, Case(CAUSAL_MASK, (6,), device_kwarg="device", function=True),
                           component="make_causal_mask",
                           hint="make_causal_mask(T, device) should build its mask on `device`: "
                                "torch.ones(T, T, dtype=torch.bool, device=device).")


def test_tgt_mask_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment2", "tgt_mask")), component="make_tgt_mask",
                           hint="Build the causal part on the device of tgt: make_causal_mask(T, device=tgt.device).")


def test_mha_stays_on_the_inputs_device(student):
    check_device_placement(student, stored_case(stored("assignment2", "mha_self_causal")),
                           component="MultiHeadAttention")
