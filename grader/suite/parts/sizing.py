"""Reference parts sized before they are built (grader.suite.parts.serve): what a stand-in asks the grader
to build is the submission's say-so, so each tensor the build makes is sized on PyTorch's meta
device first, and the build stops before the one that would pass the bound for one part (its
elements, its tensors); the grading's own bound on all it built comes on top (ReferenceParts)."""

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors


class TooLarge(ValueError):
    """A part that would pass its bound: refused before the tensor that passes it is made."""


class Sized(TorchFunctionMode):
    """Counts what torch's factory functions make inside it, each sized on the meta device before it
    is made; past `max_numel` elements or `max_tensors` tensors, TooLarge (a stacked encoder of 10,000
    layers asked for by a composite used to take the grader to 5.75 GB before any check)."""

    def __init__(self, max_numel: int, max_tensors: int):
        super().__init__()
        self.max_numel, self.max_tensors = max_numel, max_tensors
        self.numel = self.tensors = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _device_constructors():
            try:
                probe: Any = func(*args, **{**kwargs, "device": "meta"})
            except Exception:  # what meta cannot make (a copy of data): counted once made, below
                probe = None
            if isinstance(probe, torch.Tensor):
                self._count(probe.numel())
                return func(*args, **kwargs)
            made = func(*args, **kwargs)
            if isinstance(made, torch.Tensor):
                self._count(made.numel())
            return made
        return func(*args, **kwargs)

    def _count(self, numel: int) -> None:
        if self.numel + numel > self.max_numel or self.tensors + 1 > self.max_tensors:
            raise TooLarge(f"part too large: past {self.max_numel:,} elements or {self.max_tensors:,} tensors")
        self.numel += numel
        self.tensors += 1

