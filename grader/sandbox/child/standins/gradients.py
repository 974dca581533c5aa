"""Gradients through stand-ins: the reference's part keeps its graph in the grader.

A stand-in called with gradients on goes through `Through`, an autograd Function whose
forward asks the grader to run the part with grad (the grader keeps that graph, keyed by
a call id) and whose backward asks the grader for the vector-Jacobian product. Callables
in the arguments (a ResidualConnection's sublayer) are Recorders: the grader calls them
back in forward, and in backward asks them to backpropagate through the graph they kept,
which reaches the submission's own parameters (the sublayer's) on this side.

`split` and `fill` are shared with the grader, so both sides number the tensors of a
nested value alike: depth first, lists and tuples in order, dicts in insertion order.
"""

import torch


class Slot:
    """Where the n-th tensor of a value was."""

    def __init__(self, n: int):
        self.n = n


def split(value) -> tuple[object, list[torch.Tensor]]:
    """(value with every tensor replaced by a Slot, the tensors in order)."""
    tensors: list[torch.Tensor] = []
    return _take(value, tensors), tensors


def _take(v, tensors: list):
    # not a closure: a recursive closure is a reference cycle that would keep the tensors
    # (and the autograd graphs they belong to) alive until gc runs
    if isinstance(v, torch.Tensor):
        tensors.append(v)
        return Slot(len(tensors) - 1)
    if type(v) in (list, tuple):
        return type(v)(_take(x, tensors) for x in v)
    if type(v) is dict:
        return {k: _take(x, tensors) for k, x in v.items()}
    return v


def fill(skeleton, tensors: list):
    """The inverse of split: the Slots of `skeleton` replaced by `tensors`."""
    if isinstance(skeleton, Slot):
        return tensors[skeleton.n]
    if type(skeleton) in (list, tuple):
        return type(skeleton)(fill(x, tensors) for x in skeleton)
    if type(skeleton) is dict:
        return {k: fill(x, tensors) for k, x in skeleton.items()}
    return skeleton


class Through(torch.autograd.Function):
    """A call of a reference part (a calls.Call) as one node of the submission's graph."""

    @staticmethod
    def forward(ctx, call, *tensors):
        ctx.set_materialize_grads(False)
        ctx.call = call
        outputs = call.forward(list(tensors[:call.n_inputs]))
        ctx.mark_non_differentiable(*[t for t in outputs if not t.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        if all(g is None for g in grads):
            return (None,) * (1 + len(ctx.call.like))
        return (None, *ctx.call.backward(grads))


class Recorder:
    """A callable handed to a reference part, called back by the grader. With `record`, each
    call runs with gradients from a fresh leaf and is kept for `backprop`."""

    def __init__(self, fn, device, record: bool):
        self.fn, self.device, self.record = fn, device, record
        self.calls: list[tuple[list, object]] = []  # (inputs, output) of each call, in order

    def __call__(self, *args):
        moved = [a.to(self.device) if isinstance(a, torch.Tensor) and self.device is not None else a for a in args]
        if not self.record:
            return self.fn(*moved)
        leaves = [a.detach().requires_grad_() if _floating(a) else a for a in moved]
        with torch.enable_grad():
            out = self.fn(*leaves)
        self.calls.append((leaves, out))
        return out.detach() if isinstance(out, torch.Tensor) else out

    def backprop(self, index, grad):
        """Backpropagate `grad` from the output of call `index`: the submission's parameters that
        produced it accumulate their gradients; returns the gradients of that call's inputs."""
        if type(index) is not int or not 0 <= index < len(self.calls):
            raise ValueError("no such call of the sublayer")
        leaves, out = self.calls[index]
        if not isinstance(out, torch.Tensor) or not isinstance(grad, torch.Tensor) or grad.shape != out.shape:
            raise ValueError("the gradient does not match the sublayer's output")
        if out.requires_grad:
            # retained: a later backward may pass here again, and tensors the sublayer captured
            # (the decoder's memory) belong to a graph the caller still needs
            torch.autograd.backward(out, grad.to(out.device, out.dtype), retain_graph=True)
        grads = []
        for leaf in leaves:
            grads.append(leaf.grad if _floating(leaf) else None)
            if _floating(leaf):
                leaf.grad = None
        return grads


def _floating(v) -> bool:
    return isinstance(v, torch.Tensor) and v.is_floating_point()
