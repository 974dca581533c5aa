"""Token embeddings, scaled by sqrt(d_model), and the full input embedding of the Transformer."""

import math

import torch
import torch.nn as nn

from .positional_encoding import PositionalEncoding


class TokenEmbedding(nn.Module):
    """Look up a learned vector for every token id and scale it by sqrt(d_model).

        forward(x) = embedding(x) * sqrt(d_model)      x: (B, T) int64 -> (B, T, d_model)

    The scale keeps the embeddings on the same footing as the positional encoding,
    whose values lie in [-1, 1] (section 3.4 of the paper).

    The grader relies on these names:
        embedding  nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
    With a padding_idx, that token's row is a zero vector (nn.Embedding does this for you).
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None):
        super().__init__()
        ### BEGIN SOLUTION
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return self.embedding(x) * math.sqrt(self.d_model)  # (B, T, d_model)
        ### END SOLUTION


class TransformerEmbedding(nn.Module):
    """Token embedding followed by positional encoding: what the encoder and decoder read.

        forward(x) = position(token(x))      x: (B, T) int64 -> (B, T, d_model)

    The grader relies on these names:
        token     TokenEmbedding(vocab_size, d_model, padding_idx)
        position  PositionalEncoding(d_model, max_len, dropout)
    Each part gets the arguments given here, passed on (checked on a freshly built
    module, before any weights are loaded: the padding token embeds to zeros).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int = 5000, dropout: float = 0.1,
                 padding_idx: int | None = None):
        super().__init__()
        ### BEGIN SOLUTION
        self.token = TokenEmbedding(vocab_size, d_model, padding_idx)
        self.position = PositionalEncoding(d_model, max_len, dropout)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return self.position(self.token(x))  # (B, T, d_model)
        ### END SOLUTION
