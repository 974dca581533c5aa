"""Scaled dot-product attention: each query takes a softmax-weighted average of the values."""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Dropout | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attend from every query to every key and mix the values accordingly.

        scores  = q @ k^T / sqrt(d_k)                 # (..., T_q, T_k)
        scores  = scores where mask is True, a very negative number where it is False
        weights = softmax(scores, dim=-1)             # each row sums to 1
        weights = dropout(weights)                    # only if dropout is given
        out     = weights @ v                         # (..., T_q, d_v)

    Dividing by sqrt(d_k) keeps the dot products from growing with d_k, which would
    push the softmax into regions with vanishing gradients (section 3.2.1).

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v), with any number of
    leading dimensions (e.g. (B, h)). Returns (out, weights): out (..., T_q, d_v) and
    weights (..., T_q, T_k), the weights after dropout (the ones that multiplied v).

    mask: optional torch.bool tensor broadcastable to (..., T_q, T_k); True means
    "may attend", False means "blocked". Fill blocked scores with
    torch.finfo(scores.dtype).min rather than -inf: a blocked key then gets weight
    exactly 0 whenever its row has at least one visible key, and a row whose keys are
    all blocked stays finite instead of turning into NaN. Take the fill from the scores'
    own dtype: a fixed -1e9 overflows in float16, so it must work in half precision too.

    dropout: optional nn.Dropout, applied to the weights.

    Write it with matmul and softmax; do not call
    torch.nn.functional.scaled_dot_product_attention.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment2: scaled_dot_product_attention")
