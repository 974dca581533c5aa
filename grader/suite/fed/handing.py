"""The grader's side of what the fed run (grader.suite.fed.composite) hands the submission's parts: the
tensors and the callables the reference's composite gives them (a ResidualConnection's sublayer), and
the random generator's state that the two sides draw from in turn. A callable goes to the worker as a
handle of this side; the part's calls of it come back as asks (grader.sandbox.child.asked), answered
here on tensors of the forms handed to parts in the same request, and nothing else."""

from collections.abc import Callable

import torch

from grader.sandbox.child.protocol import Handle
from grader.suite.fed.forms import Unsupported
from grader.suite.fed.parts import Own, Theirs

MAX_GRAPHS = 1024  # the graphs of callables run here with gradients, kept for their backward, in one request


class Handing:
    """Fed's handing over: `objects` and `_export` (the local objects' handles) are Fed's."""

    objects: dict[int, object]
    # in the request served: the forms of the tensors handed to parts (what their asks may hand back), the
    # graphs of the callables run here with gradients (kept for the asks for their backward), and the ids
    # of the callables handed
    forms: set[tuple[tuple[int, ...], torch.dtype]]
    graphs: list[tuple[list, torch.Tensor]]
    callables: set[int]

    _export: Callable[[object], Handle]

    @staticmethod
    def resume(rng) -> None:
        """The generator here goes on from the worker's state `rng`."""
        try:
            like = torch.get_rng_state()
            if not (type(rng) is torch.Tensor and rng.dtype == like.dtype and rng.shape == like.shape):
                raise ValueError(rng)
            torch.set_rng_state(rng)
        except (ValueError, RuntimeError):
            raise Unsupported("the worker's random generator state is not one") from None

    def handed(self, v):
        """`v` as it goes to the worker: tensors plain (their forms are what an ask may hand back), the
        submission's parts as their handles, callables as handles of this side (`answer` runs them)."""
        if isinstance(v, torch.Tensor):
            self.forms.add((tuple(v.shape), v.dtype))
            return v.detach()
        if isinstance(v, (Own, Theirs)):
            return v.remote
        if type(v) in (list, tuple):
            return type(v)(self.handed(x) for x in v)
        if type(v) is dict:
            return {k: self.handed(x) for k, x in v.items()}
        if callable(v) and not isinstance(v, type):
            handle = self._export(v)
            self.callables.add(handle.id)
            return handle
        return v

    def answer(self, message: dict):
        """A part's ask to run a callable of this side that was handed to it (grader.sandbox.child.asked),
        on tensors of the forms handed to parts in this request; with gradients, its graph is kept for
        the ask for its backward. The generator goes on from the worker's state, and the worker's from
        this side's after the call."""
        if "fed_backward" in message:
            return self._answer_backward(message)
        key, args = message.get("fed"), message.get("args")
        fn = self.objects.get(key) if key in self.callables else None
        if not callable(fn):
            raise ValueError("no such callable was handed to the part")
        if not (type(args) is list and all(type(a) is torch.Tensor and (tuple(a.shape), a.dtype) in self.forms
                                           for a in args)):
            raise ValueError("the callable's arguments are not tensors of the forms handed to the part")
        self.resume(message.get("rng"))
        grad = message.get("grad") is True
        leaves = [a.detach().requires_grad_(grad and a.is_floating_point()) for a in args]
        with torch.set_grad_enabled(grad):
            out = fn(*leaves)
        if type(out) is not torch.Tensor:
            raise ValueError("the callable did not return a tensor")
        call = None
        if grad:
            if len(self.graphs) >= MAX_GRAPHS:
                raise ValueError("too many calls of the callable with gradients in one request")
            call = len(self.graphs)
            self.graphs.append((leaves, out))
        return {"call": call, "output": out.detach(), "rng": torch.get_rng_state()}

    def _answer_backward(self, message: dict):
        key, grad = message.get("fed_backward"), message.get("grad")
        if type(key) is not int or not 0 <= key < len(self.graphs):
            raise ValueError("no such call with gradients")
        leaves, out = self.graphs[key]
        if type(grad) is not torch.Tensor or grad.shape != out.shape:
            raise ValueError("the gradient is not of the callable's output's shape")
        if out.requires_grad:
            # into the leaves and the grader's own weights the callable used (the reference's parts' in it)
            torch.autograd.backward(out, grad.to(out.dtype))
        return [x.grad for x in leaves]

