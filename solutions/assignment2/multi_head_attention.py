"""Multi-head attention: several attentions run side by side on slices of the model dimension."""

import torch
import torch.nn as nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    """Project queries, keys and values, attend in n_heads heads at once, merge the heads.

        Q, K, V = w_q(q), w_k(k), w_v(v)                          # (B, T, d_model)
        split each into n_heads heads of size d_k = d_model / n_heads   # (B, h, T, d_k)
        head_i  = scaled_dot_product_attention(Q_i, K_i, V_i, mask, dropout)
        out     = w_o(concat(head_1, ..., head_h))                 # (B, T_q, d_model)

    Each head can look at a different relation between positions, at the cost of a
    single full-width attention (section 3.2.2).

    Shapes: q (B, T_q, d_model), k and v (B, T_k, d_model) -> (B, T_q, d_model).
    For self-attention q, k and v are the same tensor; for cross-attention q comes
    from the decoder and k, v from the encoder's output.

    mask: optional torch.bool tensor broadcastable to (B, n_heads, T_q, T_k), True =
    may attend (e.g. (B, 1, 1, T_k) from make_pad_mask, (B, 1, T, T) from make_tgt_mask).

    Head layout: head i uses columns i*d_k:(i+1)*d_k of each projection's output, i.e.
    split with x.view(B, T, n_heads, d_k).transpose(1, 2). This is the layout of
    torch.nn.MultiheadAttention, which the grader compares against.

    The grader relies on these names:
        w_q, w_k, w_v, w_o  nn.Linear(d_model, d_model), with bias
        dropout             nn.Dropout(dropout), applied to the attention weights
        attention_weights   after every forward, the weights (B, n_heads, T_q, T_k)
                            before dropout (each unmasked row sums to 1)
    Note the two kinds of weights: the output uses the weights after dropout (the
    ones scaled_dot_product_attention returns when given dropout), while
    attention_weights holds them before dropout, i.e. as
    scaled_dot_product_attention returns them without dropout. In eval() mode, or
    with dropout 0, the two are the same.
    d_model % n_heads != 0 raises ValueError with a message that names both values
    (d_model and n_heads).

    Do not call torch.nn.MultiheadAttention,
    torch.nn.functional.multi_head_attention_forward or
    torch.nn.functional.scaled_dot_product_attention; use your own
    scaled_dot_product_attention.

    Batch elements are independent: changing one sequence of the batch changes no
    other's output.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % n_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None
        ### END SOLUTION

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        ### BEGIN SOLUTION
        B, T_q, _ = q.shape
        T_k = k.size(1)
        # head i takes columns i*d_k:(i+1)*d_k, as in nn.MultiheadAttention
        q = self.w_q(q).view(B, T_q, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_q, d_k)
        k = self.w_k(k).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)
        v = self.w_v(v).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)
        # attend without dropout so the kept weights are the clean softmax,
        # then mix v with the dropped-out weights
        _, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T_q, T_k)
        self.attention_weights = weights
        out = self.dropout(weights) @ v  # (B, h, T_q, d_k)
        out = out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)  # (B, T_q, d_model)
        return self.w_o(out)
        ### END SOLUTION
