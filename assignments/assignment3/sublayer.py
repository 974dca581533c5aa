"""The residual connection with layer normalisation that wraps every sublayer of the Transformer."""

from typing import Callable

import torch
import torch.nn as nn

from ..assignment1.layer_norm import LayerNorm


class ResidualConnection(nn.Module):
    """Add a sublayer's output back to its input, with dropout and layer normalisation.

    Post-norm (norm_first=False, the original paper, section 5.4):
        forward(x, sublayer) = norm(x + dropout(sublayer(x)))
    Pre-norm (norm_first=True, easier to train deep stacks):
        forward(x, sublayer) = x + dropout(sublayer(norm(x)))

    Shapes: x (B, T, d_model) -> (B, T, d_model). `sublayer` is any callable mapping
    (B, T, d_model) to (B, T, d_model), e.g. `lambda x: self_attn(x, x, x, mask)` or a
    PositionwiseFeedForward module.

    The grader relies on these names:
        norm     LayerNorm(d_model) from assignment1
        dropout  nn.Dropout(dropout), applied to the sublayer's output
    """

    def __init__(self, d_model: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: ResidualConnection.__init__")

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment3: ResidualConnection.forward")
