"""The decoder: masked self-attention, attention over the encoder's output, then a feed-forward network."""

import torch
import torch.nn as nn

from ..assignment1.feed_forward import PositionwiseFeedForward
from ..assignment1.layer_norm import LayerNorm
from ..assignment2.multi_head_attention import MultiHeadAttention
from .sublayer import ResidualConnection


class DecoderLayer(nn.Module):
    """One decoder layer: causal self-attention, cross-attention to the source, then the FFN.

        x = residuals[0](x, lambda x: self_attn(x, x, x, tgt_mask))
        x = residuals[1](x, lambda x: cross_attn(x, memory, memory, src_mask))
        x = residuals[2](x, feed_forward)

    In cross-attention the queries come from the decoder (x), the keys and values from
    the encoder's output (memory), and src_mask hides the source padding.

    Shapes: x (B, T, d_model), memory (B, S, d_model),
    src_mask bool broadcastable to (B, n_heads, T, S) (typically (B, 1, 1, S)),
    tgt_mask bool broadcastable to (B, n_heads, T, T) (typically (B, 1, T, T) from
    make_tgt_mask); True = may attend -> (B, T, d_model).

    The grader relies on these names:
        self_attn     MultiHeadAttention(d_model, n_heads, dropout)
        cross_attn    MultiHeadAttention(d_model, n_heads, dropout)
        feed_forward  PositionwiseFeedForward(d_model, d_ff, dropout)
        residuals     nn.ModuleList of 3 ResidualConnection(d_model, dropout, norm_first)

    Do not use torch.nn.TransformerDecoderLayer (it is what the grader compares against)
    or any other torch.nn.Transformer* module.

    No position sees a later target position: tgt_mask is causal. Every output depends
    on the memory (cross-attention).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: DecoderLayer.__init__")

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None,
                tgt_mask: torch.Tensor | None) -> torch.Tensor:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: DecoderLayer.forward")


class Decoder(nn.Module):
    """A stack of n_layers DecoderLayers, each attending to the same encoder memory.

        for layer in layers: x = layer(x, memory, src_mask, tgt_mask)
        if norm_first: x = norm(x)      # pre-norm leaves the last output un-normalised

    Shapes: x (B, T, d_model) (already embedded), memory (B, S, d_model), masks as in
    DecoderLayer -> (B, T, d_model).

    The grader relies on these names:
        layers  nn.ModuleList of n_layers distinct
                DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) (build each
                one: repeating one instance would share its parameters)
        norm    LayerNorm(d_model), always created, applied only when norm_first

    Do not use torch.nn.TransformerDecoder or any other torch.nn.Transformer* module.

    No position sees a later target position: tgt_mask is causal.
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: Decoder.__init__")

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None,
                tgt_mask: torch.Tensor | None) -> torch.Tensor:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: Decoder.forward")
