"""Sinusoidal positional encoding: tells an order-blind attention layer where each token sits."""

import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    """Add a fixed, position-dependent vector to every token vector.

    Attention treats its input as a set; adding a different pattern at every position
    lets the model tell positions apart. For position p and column pair (2i, 2i+1):

        pe[p, 2i]   = sin(p / 10000^(2i / d_model))
        pe[p, 2i+1] = cos(p / 10000^(2i / d_model))

    (with an odd d_model the last column is a sine). Each column pair is a sinusoid
    of its own wavelength, from 2*pi up to 10000*2*pi.

        forward(x) = dropout(x + pe[:T])      x: (B, T, d_model) -> (B, T, d_model)

    The grader relies on these names:
        pe       the (max_len, d_model) table, registered with register_buffer (it is
                 not learned, so it must not be a Parameter, but it must follow
                 .to(device) and .to(dtype)); persistent or not (persistent=False
                 leaves it out of state_dict): either is accepted
        dropout  nn.Dropout(dropout)

    A sequence longer than max_len raises ValueError naming T and max_len.
    Computing the table in float32 with exp/log is fine: checks allow an error of
    1e-5 + 2e-7 * p at row p.

    max_len defaults to 5000.
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        ### BEGIN SOLUTION
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))  # (ceil(d/2),)
        pe = torch.zeros(max_len, d_model)  # (max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div[: d_model // 2])  # odd d_model: one cosine fewer
        self.register_buffer("pe", pe)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        T = x.size(1)
        if T > self.max_len:
            raise ValueError(f"sequence length T ({T}) exceeds max_len ({self.max_len})")
        return self.dropout(x + self.pe[:T])  # (B, T, d_model)
        ### END SOLUTION
