"""Calling the submission's scaled_dot_product_attention, shared by the public and hidden tiers."""

import torch

from grader.suite.checks import Mismatch, expect_tensor, short
from tests.grading.helpers.names import SDPA

SDPA_HINT = ("Likely causes: the scale (divide q @ k^T by sqrt(d_k)), the softmax dimension (dim=-1, over the "
             "keys), the mask's polarity (True = may attend) or blocked scores filled after the softmax.")


def call_sdpa(student, q, k, v, mask=None, example: str = "", **kwargs):
    """Call the submission's attention; it must return (out, weights) of the right shapes."""
    got = student.call(SDPA, q, k, v, mask, **kwargs)
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
