"""The position-wise feed-forward network: the same two-layer MLP applied at every position."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    """Expand each position's vector to d_ff, apply ReLU, project back to d_model.

        FFN(x) = linear2(dropout(relu(linear1(x))))

    The positions never mix: a (B, T, d_model) input is treated as B*T independent
    vectors. In the paper d_ff = 4 * d_model (2048 for d_model = 512).

    Shapes: x (..., d_model) -> (..., d_model).

    The grader relies on these names:
        linear1  nn.Linear(d_model, d_ff)   (with bias)
        linear2  nn.Linear(d_ff, d_model)   (with bias)
        dropout  nn.Dropout(dropout), applied after the ReLU
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment1: PositionwiseFeedForward.__init__")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment1: PositionwiseFeedForward.forward")
