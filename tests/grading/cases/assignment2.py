"""Fixed assignment2 cases whose reference outputs ship with the public tier (`grade expected`)."""

import torch

from grader.authoring.expected import Case


def _attention(lead, t_q, t_k, d_k, d_v, masked):
    def make(g):
        q, k = torch.randn(*lead, t_q, d_k, generator=g), torch.randn(*lead, t_k, d_k, generator=g)
        v = torch.randn(*lead, t_k, d_v, generator=g)
        mask = torch.rand(*lead, t_q, t_k, generator=g) < 0.6 if masked else None
        if masked:
            mask[..., 0] = True  # every query sees at least one key
        return q, k, v, mask
    return make


def _padded(vocab, pad, *lengths, T):
    def make(g):
        x = torch.randint(0, vocab, (len(lengths), T), generator=g)
        x[x == pad] = pad + 1
        for row, n in enumerate(lengths):
            x[row, n:] = pad
        return (x, pad)
    return make


def _cross(B, t_q, t_k, d, lengths):
    def make(g):
        mask = torch.zeros(B, 1, 1, t_k, dtype=torch.bool)
        for row, n in enumerate(lengths):
            mask[row, ..., :n] = True
        return (torch.randn(B, t_q, d, generator=g), torch.randn(B, t_k, d, generator=g),
                torch.randn(B, t_k, d, generator=g), mask)
    return make


def _self_causal(B, T, d):
    def make(g):
        x = torch.randn(B, T, d, generator=g)
        return x, x, x, torch.ones(T, T, dtype=torch.bool).tril()[None, None]
    return make


SDPA = "assignment2.attention:scaled_dot_product_attention"
MHA = "assignment2.multi_head_attention:MultiHeadAttention"

CASES = [
    Case("sdpa", SDPA, (), _attention((2,), 4, 5, 8, 3, False), kind="function"),
    Case("sdpa_masked", SDPA, (), _attention((2, 2), 5, 4, 4, 6, True), kind="function", seed=1),
    Case("pad_mask", "assignment2.masks:make_pad_mask", (), _padded(12, 1, 5, 3, 6, T=6), kind="function"),
    Case("causal_mask", "assignment2.masks:make_causal_mask", (6,), lambda g: (), kind="function"),
    Case("tgt_mask", "assignment2.masks:make_tgt_mask", (), _padded(9, 0, 4, 7, T=7), kind="function", seed=2),
    Case("mha_cross", MHA, (8, 2), _cross(2, 3, 5, 8, [5, 2])),
    Case("mha_self_causal", MHA, (12, 3), _self_causal(2, 6, 12), seed=1),
]
