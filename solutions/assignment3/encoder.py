"""The encoder: a stack of identical layers of self-attention followed by a feed-forward network."""

import torch
import torch.nn as nn

from ..assignment1.feed_forward import PositionwiseFeedForward
from ..assignment1.layer_norm import LayerNorm
from ..assignment2.multi_head_attention import MultiHeadAttention
from .sublayer import ResidualConnection


class EncoderLayer(nn.Module):
    """One encoder layer: every position attends to the whole source, then goes through the FFN.

        x = residuals[0](x, lambda x: self_attn(x, x, x, src_mask))
        x = residuals[1](x, feed_forward)

    Shapes: x (B, S, d_model), src_mask bool broadcastable to (B, n_heads, S, S)
    (typically (B, 1, 1, S) from make_pad_mask; True = may attend) -> (B, S, d_model).

    The grader relies on these names:
        self_attn     MultiHeadAttention(d_model, n_heads, dropout)
        feed_forward  PositionwiseFeedForward(d_model, d_ff, dropout)
        residuals     nn.ModuleList of 2 ResidualConnection(d_model, dropout, norm_first)

    Do not use torch.nn.TransformerEncoderLayer (it is what the grader compares against)
    or any other torch.nn.Transformer* module.

    A key that the mask blocks (padding) has no effect on any output.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.residuals = nn.ModuleList(
            [ResidualConnection(d_model, dropout, norm_first) for _ in range(2)]
        )
        ### END SOLUTION

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        ### BEGIN SOLUTION
        x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))  # (B, S, d_model)
        return self.residuals[1](x, self.feed_forward)  # (B, S, d_model)
        ### END SOLUTION


class Encoder(nn.Module):
    """A stack of n_layers EncoderLayers; its output is the `memory` the decoder attends to.

        for layer in layers: x = layer(x, src_mask)
        if norm_first: x = norm(x)      # pre-norm leaves the last output un-normalised

    Shapes: x (B, S, d_model) (already embedded), src_mask as in EncoderLayer
    -> (B, S, d_model).

    The grader relies on these names:
        layers  nn.ModuleList of n_layers distinct
                EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) (build each
                one: repeating one instance would share its parameters)
        norm    LayerNorm(d_model), always created, applied only when norm_first

    Do not use torch.nn.TransformerEncoder or any other torch.nn.Transformer* module.

    A key that the mask blocks (padding) has no effect on any output.
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        self.layers = nn.ModuleList(
            [EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]
        )
        self.norm = LayerNorm(d_model)
        self.norm_first = norm_first
        ### END SOLUTION

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        ### BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x, src_mask)  # (B, S, d_model)
        # post-norm layers already end in a norm; pre-norm ones need a final one
        return self.norm(x) if self.norm_first else x
        ### END SOLUTION
