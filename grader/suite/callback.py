"""The autograd node through which a reference part's graph reaches back into the submission's process."""

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SublayerCall:
    """The call back one Callback node makes: forward, `call_back(handle, *args)`; backward,
    `call_back(backprop, index, grad)`, through the graph the `index`th call of `handle` kept."""

    call_back: Callable
    handle: object
    backprop: object
    index: int


class Callback(torch.autograd.Function):
    """A call back into the submission's process (a sublayer) as one node of the reference's graph:
    backward asks that process to backpropagate through the graph it kept for the call."""

    @staticmethod
    def forward(ctx, call: SublayerCall, anchor, *args):
        ctx.call_back, ctx.backprop, ctx.index = call.call_back, call.backprop, call.index
        ctx.like = [(a.shape, a.dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else None
                    for a in args]
        out = call.call_back(call.handle, *[a.detach() if isinstance(a, torch.Tensor) else a for a in args])
        if type(out) is not torch.Tensor or not out.is_floating_point():
            raise ValueError("the sublayer should return a floating-point tensor")
        return out

    @staticmethod
    def backward(ctx, grad):
        grads = ctx.call_back(ctx.backprop, ctx.index, grad)
        if type(grads) is not list or len(grads) != len(ctx.like) or any(
                g is not None and (like is None or type(g) is not torch.Tensor or g.shape != like[0])
                for g, like in zip(grads, ctx.like, strict=True)):
            raise ValueError("the sublayer's process sent malformed gradients")
        return (None,) * 2 + tuple(None if g is None else g.to(like[1])
                                   for g, like in zip(grads, ctx.like, strict=True))
