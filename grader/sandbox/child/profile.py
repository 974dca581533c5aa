"""Performance feedback: one implementation's forward and backward, timed, with its memory.

The submission's attention, multi-head attention and encoder layer are measured in its own
process, beside torch's built-ins on the same shapes (F.scaled_dot_product_attention,
nn.MultiheadAttention, nn.TransformerEncoderLayer); the reference, whose code never enters that
process, is measured with this same code in the grader's. One thread in both.

Whatever the submission's process reports can be forged by the submission (its code runs
there and can replace the clock), so these numbers are feedback: they decide no points unless
course.toml's [performance] section gives them some (grader.grading.performance).

Memory: on a GPU, the peak of torch.cuda.max_memory_allocated during one step, above what was
allocated before it. On the CPU torch keeps no such count (and tracemalloc does not see tensor
memory), so the figure there is the bytes of the tensors autograd saves for backward, each
storage once: the activation memory that a training step holds between forward and backward.
"""

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

# small enough for well under a second per assignment on one CPU thread, large enough to time
SHAPE = {"batch": 4, "length": 64, "d_model": 64, "n_heads": 4, "d_ff": 128}
KINDS = ("attention", "multi_head_attention", "encoder_layer")


def inputs(kind: str, shape: dict) -> list[torch.Tensor]:
    """Fixed random inputs; the last quarter of every sequence but the first is padding."""
    B, T, d, h = shape["batch"], shape["length"], shape["d_model"], shape["n_heads"]
    g = torch.Generator().manual_seed(0)
    keep = torch.ones(B, T, dtype=torch.bool)
    keep[1:, T - T // 4:] = False
    if kind == "attention":
        return [*(torch.randn(B, h, T, d // h, generator=g) for _ in range(3)), keep[:, None, None, :]]
    return [torch.randn(B, T, d, generator=g), keep[:, None, None, :]]


def build(kind: str, implementation, shape: dict) -> tuple[Callable, nn.Module | None]:
    """(inputs -> output, the module to move) for the contract's `implementation` (a function or
    class), or for torch's built-in when it is None."""
    d, h, f = shape["d_model"], shape["n_heads"], shape["d_ff"]
    torch.manual_seed(0)
    if kind == "attention":
        if implementation is None:
            return (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)), None
        return (lambda q, k, v, m: implementation(q, k, v, m)[0]), None
    if kind == "multi_head_attention":
        if implementation is None:
            mha = nn.MultiheadAttention(d, h, batch_first=True)
            return (lambda x, m: mha(x, x, x, key_padding_mask=~m[:, 0, 0, :], need_weights=False)[0]), mha
        own = implementation(d, h)
        return (lambda x, m: own(x, x, x, m)), own
    if implementation is None:
        layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True)
        return (lambda x, m: layer(x, src_key_padding_mask=~m[:, 0, 0, :])), layer
    own = implementation(d, h, f, dropout=0.0)
    return (lambda x, m: own(x, m)), own


def measure(kind: str, implementation, device: str, repeat: int, shape: dict | None = None) -> dict:
    """{"seconds": median of `repeat` forward + backward steps after a warm-up, "memory_bytes"}."""
    shape = shape or SHAPE
    call, module = build(kind, implementation, shape)
    if module is not None:
        module.to(device).train()
    args = [t.to(device).requires_grad_() if t.is_floating_point() else t.to(device) for t in inputs(kind, shape)]
    cuda = device.startswith("cuda")

    def step():
        call(*args).float().sum().backward()

    step()  # warm-up: lazy initialisation, caches, kernels chosen
    times = []
    for _ in range(repeat):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return {"seconds": statistics.median(times), "memory_bytes": _memory(step, device)}


def _memory(step: Callable, device: str) -> int:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated() - before)
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor):
        storage = t.untyped_storage()
        saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(saved.values())
