"""Calling the submission's scaled_dot_product_attention, shared by the public and hidden tiers."""

import math

import torch
import torch.nn.functional as F

from grader.suite.checks import Mismatch, expect_tensor, short
from tests.grading.helpers.names import SDPA
from tests.grading.helpers.oracles import mha_weights

SDPA_HINT = ("Likely causes: the scale (divide q @ k^T by sqrt(d_k)), the softmax dimension (dim=-1, over the "
             "keys), the mask's polarity (True = may attend) or blocked scores filled after the softmax.")


def call_sdpa(student, q, k, v, mask=None, *, example: str = "", dropout=None, seed: int | None = None):
    """Call the submission's attention (with `dropout`, a module, where given, after seeding with
    `seed`); it must return (out, weights) of the right shapes."""
    got = student.call(SDPA, q, k, v, mask, kwargs={} if dropout is None else {"dropout": dropout}, seed=seed)
    if not (type(got) is tuple and len(got) == 2):
        raise Mismatch("scaled_dot_product_attention should return a pair (out, weights)",
                       expected="a tuple (out, weights)", got=short(got), example=example,
                       hint="The function returned something other than a pair. Likely causes: returning only "
                            "the output; the docstring asks for `return weights @ v, weights`.")
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    out = expect_tensor(got[0], name="out", shape=(*lead, q.shape[-2], v.shape[-1]), dtype=torch.float32,
                        example=example, hint="out = weights @ v has shape (..., T_q, d_v).")
    w = expect_tensor(got[1], name="weights", shape=(*lead, q.shape[-2], k.shape[-2]), dtype=torch.float32,
                      example=example, hint="weights has shape (..., T_q, T_k): one row per query.")
    return out, w


def one_head_weights(d: int, h: int, head: int, seed: int) -> dict:
    """mha_weights(d, seed) with only head `head`'s columns of w_q and w_k non-zero (times 3) and no query or
    key bias: every other head's weights are uniform (--repro draws them again from the seed the check records)."""
    cols = slice(head * (d // h), (head + 1) * (d // h))
    w = mha_weights(d, seed)
    for n in ("w_q", "w_k"):
        keep = torch.zeros(d, 1)
        keep[cols] = 1.0
        w[f"{n}.weight"] = w[f"{n}.weight"] * keep * 3
        w[f"{n}.bias"] = torch.zeros(d)
    return w


def one_head_expected(w: dict, h: int, head: int, q, kv) -> torch.Tensor:
    """The attention weights (B, h, T_q, T_k) in float64 under one_head_weights: uniform but in head `head`."""
    d = q.shape[-1]
    d_k = d // h
    cols = slice(head * d_k, (head + 1) * d_k)
    Q = F.linear(q, w["w_q.weight"])[..., cols].double()
    K = F.linear(kv, w["w_k.weight"])[..., cols].double()
    expected = torch.full((q.shape[0], h, q.shape[1], kv.shape[1]), 1.0 / kv.shape[1], dtype=torch.float64)
    expected[:, head] = (Q @ K.transpose(-2, -1) / math.sqrt(d_k)).softmax(-1)
    return expected
