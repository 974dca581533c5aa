"""Boolean attention masks: True where a query may attend to a key, False where it is blocked."""

import torch


def make_pad_mask(tokens: torch.Tensor, pad_idx: int) -> torch.Tensor:
    """Block attention to padding tokens.

        mask[b, 0, 0, j] = tokens[b, j] != pad_idx

    Shapes: tokens (B, T) int64 -> mask (B, 1, 1, T) torch.bool. The two singleton
    dimensions let it broadcast against the scores (B, h, T_q, T_k): the same keys are
    hidden from every head and every query.
    """
    ### BEGIN SOLUTION
    return (tokens != pad_idx)[:, None, None, :]  # (B, 1, 1, T)
    ### END SOLUTION


def make_causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Let position i attend only to positions j <= i (no peeking at the future).

        mask[0, 0, i, j] = j <= i        (lower-triangular, diagonal included)

    Shapes: returns (1, 1, T, T) torch.bool on `device`.
    """
    ### BEGIN SOLUTION
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)
    ### END SOLUTION


def make_tgt_mask(tgt: torch.Tensor, pad_idx: int) -> torch.Tensor:
    """The decoder's self-attention mask: causal AND not padding.

        mask[b, 0, i, j] = (j <= i) and tgt[b, j] != pad_idx

    Shapes: tgt (B, T) int64 -> mask (B, 1, T, T) torch.bool. Build it from
    make_pad_mask and make_causal_mask.
    """
    ### BEGIN SOLUTION
    pad = make_pad_mask(tgt, pad_idx)  # (B, 1, 1, T)
    causal = make_causal_mask(tgt.size(1), device=tgt.device)  # (1, 1, T, T)
    return pad & causal  # (B, 1, T, T)
    ### END SOLUTION
