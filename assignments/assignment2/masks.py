"""Boolean attention masks: True where a query may attend to a key, False where it is blocked."""

import torch


def make_pad_mask(tokens: torch.Tensor, pad_idx: int) -> torch.Tensor:
    """Block attention to padding tokens.

        mask[b, 0, 0, j] = tokens[b, j] != pad_idx

    Shapes: tokens (B, T) int64 -> mask (B, 1, 1, T) torch.bool. The two singleton
    dimensions let it broadcast against the scores (B, h, T_q, T_k): the same keys are
    hidden from every head and every query.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment2: make_pad_mask")


def make_causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Let position i attend only to positions j <= i (no peeking at the future).

        mask[0, 0, i, j] = j <= i        (lower-triangular, diagonal included)

    Shapes: returns (1, 1, T, T) torch.bool on `device`.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment2: make_causal_mask")


def make_tgt_mask(tgt: torch.Tensor, pad_idx: int) -> torch.Tensor:
    """The decoder's self-attention mask: causal AND not padding.

        mask[b, 0, i, j] = (j <= i) and tgt[b, j] != pad_idx

    Shapes: tgt (B, T) int64 -> mask (B, 1, T, T) torch.bool. Build it from
    make_pad_mask and make_causal_mask.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment2: make_tgt_mask")
