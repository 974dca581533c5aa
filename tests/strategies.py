"""Hypothesis strategies for the grading suites, composed from a few small pieces.

Sizes stay small: every example crosses a process boundary, and a student waits.
Tensors are drawn from a seed, not element by element, so examples shrink to small
shapes quickly and print compactly.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from grader.suite import draws

batch = st.integers(1, 3)
length = st.integers(1, 7)
d_model = st.sampled_from([4, 6, 8, 16])
odd_or_even_d_model = st.sampled_from([3, 4, 5, 8, 16])
d_ff = st.sampled_from([8, 12, 32])
eps = st.sampled_from([1e-5, 1e-3, 0.1, 1.0])
seeds = st.integers(0, 2**16)
vocab_size = st.integers(5, 40)


def tensor(shape, seed: int, scale: float = 1.0, offset: float = 0.0, dtype=torch.float32) -> torch.Tensor:
    global _kept_bytes
    key = (tuple(shape), draws.seed(seed), scale, offset, dtype)
    drawn = _DRAWN.get(key)
    if drawn is None:
        g = torch.Generator().manual_seed(key[1])
        drawn = (torch.randn(key[0], generator=g, dtype=torch.float64) * scale + offset).to(dtype)
        if drawn.numel() <= 4096:
            if _kept_bytes + drawn.nbytes > _KEPT_BYTES:
                _DRAWN.clear()
                _kept_bytes = 0
            _DRAWN[key] = drawn
            _kept_bytes += drawn.nbytes
    return drawn.clone()


# Derandomized examples draw the same small tensors again and again, in one grading and in every
# grading of a warm grader: a copy of the first draw costs a tenth of drawing it again. A
# grading keeps about 6,000 of them, under 1 MB
_DRAWN: dict[tuple, torch.Tensor] = {}
_KEPT_BYTES = 2**25
_kept_bytes = 0  # in _DRAWN


def tokens(shape, vocab: int, seed: int, low: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(draws.seed(seed))
    return torch.randint(low, vocab, shape, generator=g)


@dataclass
class Activations:
    x: torch.Tensor
    seed: int

    @property
    def d_model(self) -> int:
        return self.x.shape[-1]


@st.composite
def activations(draw, d=d_model, leading=st.lists(st.integers(1, 4), min_size=1, max_size=3),
                scale=st.sampled_from([1.0, 3.0]), offset=st.sampled_from([0.0, 2.0])) -> Activations:
    """(..., d_model) float32 activations with 1 to 3 leading dimensions."""
    seed = draw(seeds)
    return Activations(tensor([*draw(leading), draw(d)], seed, draw(scale), draw(offset)), seed)


@st.composite
def far_from_zero(draw, d=d_model, offset: float = 1e4, step: float = 2.0 ** -6) -> Activations:
    """(B, T, d_model) activations offset + z, z of spread about 1, on a grid of `step`.

    float32 holds every value exactly (1e4 needs 14 bits of mantissa, the grid 6 more), so a float64
    computation on the float32 tensor is the exact answer and no check rewards one way of rounding."""
    seed = draw(seeds)
    z = tensor([draw(batch), draw(length), draw(d)], seed, dtype=torch.float64)
    x = offset + torch.round(z / step) * step
    assert torch.equal(x.float().double(), x)  # exactly representable
    return Activations(x.float(), seed)


@st.composite
def sequences(draw, d=d_model) -> Activations:
    """(B, T, d_model) float32 activations."""
    seed = draw(seeds)
    return Activations(tensor([draw(batch), draw(length), draw(d)], seed), seed)


@st.composite
def token_batches(draw, vocab=vocab_size, max_t: int = 7):
    """(vocab, tokens (B, T) int64) with every id below vocab."""
    v = draw(vocab)
    return v, tokens((draw(batch), draw(st.integers(1, max_t))), v, draw(seeds))


# assignments 2 and 3 ---------------------------------------------------------------------

d_k = st.sampled_from([1, 2, 4, 8])
heads = st.sampled_from([(4, 1), (4, 2), (6, 3), (8, 2), (8, 4), (16, 4)])  # (d_model, n_heads)
pad_idx = st.integers(0, 3)


@dataclass
class AttentionInputs:
    q: torch.Tensor  # (..., T_q, d_k)
    k: torch.Tensor  # (..., T_k, d_k)
    v: torch.Tensor  # (..., T_k, d_v)
    mask: torch.Tensor | None  # bool, broadcastable to (..., T_q, T_k)
    seed: int


@st.composite
def attention_inputs(draw, masked=st.booleans(), leading=st.lists(st.integers(1, 3), min_size=0, max_size=2),
                     scale=st.sampled_from([1.0, 2.0])) -> AttentionInputs:
    """q, k, v with 0 to 2 leading dimensions, T_q and T_k drawn apart, and a random bool mask
    (True = may attend) whose shape is one of the broadcastable ones; some rows may be fully blocked."""
    seed, lead = draw(seeds), draw(leading)
    t_q, t_k, dk, dv = draw(length), draw(length), draw(d_k), draw(st.integers(1, 6))
    sc = draw(scale)
    q = tensor([*lead, t_q, dk], seed, sc)
    k = tensor([*lead, t_k, dk], seed + 1, sc)
    v = tensor([*lead, t_k, dv], seed + 2)
    mask = None
    if draw(masked):
        shape = draw(st.sampled_from([[*lead, t_q, t_k], [*lead, 1, t_k], [1] * len(lead) + [t_q, t_k], [t_q, t_k]]))
        g = torch.Generator().manual_seed(draws.seed(seed + 3))
        mask = torch.rand(*shape, generator=g) < 0.7
    return AttentionInputs(q, k, v, mask, seed)


@dataclass
class PaddedTokens:
    tokens: torch.Tensor  # (B, T) int64, every row starts with a real token, padding only at the end
    pad_idx: int
    lengths: list[int]  # real tokens per row
    vocab: int
    seed: int

    @property
    def real(self) -> torch.Tensor:  # (B, T) bool
        return self.tokens != self.pad_idx


@st.composite
def padded_tokens(draw, vocab=st.integers(6, 20), max_t: int = 7, pad=pad_idx, min_t: int = 1) -> PaddedTokens:
    """(B, T) token ids: each row has 1..T real tokens (ids other than pad_idx), then pad_idx."""
    v, p, seed = draw(vocab), draw(pad), draw(seeds)
    b, t = draw(batch), draw(st.integers(min_t, max_t))
    lengths = [draw(st.integers(1, t)) for _ in range(b)]
    x = tokens((b, t), v - 1, seed)
    x = x + (x >= p).long()  # real ids skip pad_idx
    for row, n in enumerate(lengths):
        x[row, n:] = p
    return PaddedTokens(x, p, lengths, v, seed)


@st.composite
def layer_configs(draw):
    """(d_model, n_heads, d_ff) for encoder and decoder layers."""
    d, h = draw(heads.filter(lambda dh: dh[0] <= 8))
    return d, h, draw(st.sampled_from([8, 16]))


@st.composite
def source_and_target(draw, vocab=st.integers(6, 20), max_t: int = 6):
    """(src, tgt) PaddedTokens with the same batch size and pad_idx, lengths drawn apart."""
    v, p, seed = draw(vocab), draw(pad_idx), draw(seeds)
    b = draw(batch)
    pair = []
    for offset in (0, 1):
        t = draw(st.integers(1, max_t))
        lengths = [draw(st.integers(1, t)) for _ in range(b)]
        x = tokens((b, t), v - 1, seed + offset)
        x = x + (x >= p).long()
        for row, n in enumerate(lengths):
            x[row, n:] = p
        pair.append(PaddedTokens(x, p, lengths, v, seed + offset))
    return tuple(pair)


# assignment 4 ------------------------------------------------------------------------------

WORDS = ["the", "of", "march", "may", "1994", "3rd", ",", "jan", "a", "b", "c", "d", "e", "f", "g", "h"]


@st.composite
def sentences(draw, min_n: int = 1, max_n: int = 5, max_len: int = 6) -> list[list[str]]:
    """A few token sequences (lists of str) from a small word list, so that words repeat."""
    words = st.sampled_from(WORDS)
    return draw(st.lists(st.lists(words, min_size=1, max_size=max_len), min_size=min_n, max_size=max_n))


@st.composite
def id_pairs(draw, vocab: int = 12, max_b: int = 4, max_len: int = 6) -> list[tuple[list[int], list[int]]]:
    """(src_ids, tgt_ids) pairs of real token ids (>= 4, so never a special), lengths 1..max_len."""
    ids = st.lists(st.integers(4, vocab - 1), min_size=1, max_size=max_len)
    return draw(st.lists(st.tuples(ids, ids), min_size=1, max_size=max_b))


@st.composite
def smoothing_cases(draw):
    """(logits (N, V), targets (N,) with at least one non-pad target, pad_idx, smoothing)."""
    n, v, seed = draw(st.integers(1, 12)), draw(st.integers(3, 10)), draw(seeds)
    pad = draw(st.sampled_from([0, v - 1]))
    targets = tokens((n,), v, seed + 1)
    if bool((targets == pad).all()):
        targets[0] = (pad + 1) % v
    return tensor([n, v], seed, 2.0), targets, pad, draw(st.sampled_from([0.0, 0.1, 0.25]))
