"""Assignment 2, hidden tier: the live reference, on inputs drawn with the course's own seed."""

import torch
from hypothesis import given

from grader.sandbox.child.tree import resolve
from grader.suite.checks import describe, expect_tensor
from tests import strategies as s
from tests.grading.helpers.attention import SDPA_HINT, call_sdpa
from tests.grading.helpers.compare import assert_close
from tests.grading.helpers.names import CAUSAL_MASK, MHA, PAD_MASK, SDPA, TGT_MASK
from tests.grading.helpers.oracles import graded_rows
from tests.grading.support import check_reference


@given(a=s.attention_inputs())
def test_sdpa_matches_reference(student, reference, a):
    example = describe(q=a.q, k=a.k, v=a.v, mask=a.mask)
    exp_out, exp_w = resolve(reference, SDPA)(a.q, a.k, a.v, a.mask)
    out, w = call_sdpa(student, a.q, a.k, a.v, a.mask, example=example)
    rows = graded_rows(a.mask, w.shape)[..., None]
    assert_close(w, exp_w, name="attention weights", example=example, mask=rows.expand(w.shape), hint=SDPA_HINT)
    assert_close(out, exp_out, name="attention output", example=example, mask=rows.expand(out.shape),
                 hint=SDPA_HINT)


def _check_mask(student, reference, target, *args, hint=""):
    expected = resolve(reference, target)(*args)
    example = describe(**{f"input{i}": a for i, a in enumerate(args)})
    got = expect_tensor(student.call(target, *args), name=f"{target.split(':')[1]}'s mask", shape=expected.shape,
                        dtype=torch.bool, example=example, hint=hint)
    assert_close(got, expected, name=f"{target.split(':')[1]}'s mask", example=example, hint=hint)


@given(p=s.padded_tokens(max_t=9))
def test_pad_mask_matches_reference(student, reference, p):
    _check_mask(student, reference, PAD_MASK, p.tokens, p.pad_idx, hint="True where tokens != pad_idx, (B, 1, 1, T).")


def test_causal_mask_matches_reference(student, reference):
    for T in (1, 2, 5, 11):
        _check_mask(student, reference, CAUSAL_MASK, T, hint="(1, 1, T, T), True where j <= i.")


@given(p=s.padded_tokens(max_t=9))
def test_tgt_mask_matches_reference(student, reference, p):
    _check_mask(student, reference, TGT_MASK, p.tokens, p.pad_idx, hint="causal AND not padding, (B, 1, T, T).")


@given(p=s.padded_tokens(max_t=9))
def test_tgt_mask_matches_reference_with_reference_parts(student, reference, p):
    student.swap(PAD_MASK, CAUSAL_MASK)
    _check_mask(student, reference, TGT_MASK, p.tokens, p.pad_idx,
                hint="Graded on the reference's make_pad_mask and make_causal_mask: combine them with &, "
                     "pad (B, 1, 1, T) & causal (1, 1, T, T).")


@given(dh=s.heads, keys=s.padded_tokens(), t_q=s.length, seed=s.seeds)
def test_mha_matches_reference(student, reference, dh, keys, t_q, seed):
    d, h = dh
    B, T_k = keys.tokens.shape
    inputs = {"q": s.tensor([B, t_q, d], seed), "k": s.tensor([B, T_k, d], seed + 1),
              "v": s.tensor([B, T_k, d], seed + 2), "mask": keys.real[:, None, None, :]}
    check_reference(student, reference, MHA, (d, h), inputs, seed=seed, atol=1e-4)


@given(dh=s.heads, keys=s.padded_tokens(), t_q=s.length, seed=s.seeds)
def test_mha_matches_reference_with_reference_attention(student, reference, dh, keys, t_q, seed):
    d, h = dh
    B, T_k = keys.tokens.shape
    inputs = {"q": s.tensor([B, t_q, d], seed), "k": s.tensor([B, T_k, d], seed + 1),
              "v": s.tensor([B, T_k, d], seed + 2), "mask": keys.real[:, None, None, :]}
    student.swap(SDPA)
    check_reference(student, reference, MHA, (d, h), inputs, seed=seed, atol=1e-4,
                    hint="Graded on the reference's scaled_dot_product_attention: check the projections, the "
                         "split into heads (view(B, T, h, d_k).transpose(1, 2)), the merge and w_o.")
