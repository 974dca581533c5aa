"""Hypothesis strategies for the grading suites, composed from a few small pieces.

Sizes stay small: every example crosses a process boundary, and a student waits.
Tensors are drawn from a seed, not element by element, so examples shrink to small
shapes quickly and print compactly.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

batch = st.integers(1, 3)
length = st.integers(1, 7)
d_model = st.sampled_from([4, 6, 8, 16])
odd_or_even_d_model = st.sampled_from([3, 4, 5, 8, 16])
d_ff = st.sampled_from([8, 12, 32])
eps = st.sampled_from([1e-5, 1e-3, 0.1, 1.0])
seeds = st.integers(0, 2**16)
vocab_size = st.integers(5, 40)


def tensor(shape, seed: int, scale: float = 1.0, offset: float = 0.0, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale + offset).to(dtype)


def tokens(shape, vocab: int, seed: int, low: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
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
def sequences(draw, d=d_model) -> Activations:
    """(B, T, d_model) float32 activations."""
    seed = draw(seeds)
    return Activations(tensor([draw(batch), draw(length), draw(d)], seed), seed)


@st.composite
def token_batches(draw, vocab=vocab_size, max_t: int = 7):
    """(vocab, tokens (B, T) int64) with every id below vocab."""
    v = draw(vocab)
    return v, tokens((draw(batch), draw(st.integers(1, max_t))), v, draw(seeds))
