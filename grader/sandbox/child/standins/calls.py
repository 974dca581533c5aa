"""A stand-in's calls of the reference's part with gradients (grader.sandbox.child.standins.standin): what
the backward through such a call needs on the worker's side, and how its inputs and outputs travel."""

import weakref
from dataclasses import dataclass

import torch

from grader.sandbox.child.standins.gradients import Recorder, fill, split


@dataclass(frozen=True)
class Arguments:
    """A call's arguments as they travel: their structure with the tensors taken out (`split`), its
    callables made Recorders (`_wrap_callables`), and the tensors."""

    skeleton: object
    inputs: list[torch.Tensor]
    recorders: list[Recorder]


class Call:
    """One call of a reference part with gradients: what its backward needs on this side."""

    def __init__(self, link, module, message, arguments: Arguments, params, device):
        self.link, self.module, self.message, self.device = link, module, message, device
        self.skeleton, self.recorders, inputs = arguments.skeleton, arguments.recorders, arguments.inputs
        self.like = [(t.shape, t.dtype, t.device, t.is_floating_point()) for t in [*inputs, *params]]
        self.n_inputs = len(inputs)
        self.id: int | None = None
        self.out_skeleton: object = None

    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        message = self.message
        message["args"], message["kwargs"] = fill(self.skeleton, [_portable(t) for t in inputs])
        answer = self.link.send(message)
        self.message = None  # the inputs are not kept here: the grader holds the graph
        output = _output(answer)
        if type(answer.get("call")) is not int:
            raise RuntimeError("the grader kept no graph for this call")
        self.id = answer["call"]
        # the grader keeps the graph until autograd drops this call (its ctx) on this side
        weakref.finalize(self, _release, self.link.freed, self.id, self.recorders)
        self.link.set_attrs(self.module, answer, self.device)
        self.out_skeleton, outputs = split(output)
        return [_to(t, self.device) for t in outputs]

    def output(self, outputs):
        return fill(self.out_skeleton, list(outputs))

    def backward(self, grads) -> list[torch.Tensor | None]:
        answer = self.link.send({"backward": self.id, "grads": [None if g is None else g.detach().cpu()
                                                                for g in grads]})
        ok = isinstance(answer, dict) and type(answer.get("inputs")) is list and type(answer.get("params")) is list
        got = [*answer["inputs"], *answer["params"]] if ok else []
        if len(got) != len(self.like):
            raise RuntimeError("the grader sent gradients for other tensors than the inputs")
        out = []
        for g, (shape, dtype, device, floating) in zip(got, self.like, strict=True):
            if g is not None and (not isinstance(g, torch.Tensor) or g.shape != shape):
                raise RuntimeError("the grader sent a gradient of the wrong shape")
            out.append(g.to(device, dtype) if g is not None and floating else None)
        return out


def _release(freed: list, call: int, recorders: list):
    """A call's graph is gone on this side: the grader may drop its own, the recorders theirs."""
    freed.append(call)
    for r in recorders:
        r.calls.clear()


def _wrap_callables(v, device, record: bool, recorders: list):
    """Callables in the arguments (a ResidualConnection's sublayer) travel as Recorders, which the
    grader calls back. Not a closure: that would be a cycle keeping the recorded graphs alive."""
    if type(v) in (list, tuple):
        return type(v)(_wrap_callables(x, device, record, recorders) for x in v)
    if type(v) is dict:
        return {k: _wrap_callables(x, device, record, recorders) for k, x in v.items()}
    if callable(v) and not isinstance(v, type):
        recorders.append(Recorder(v, device, record))
        return recorders[-1]
    return v


def _output(answer):
    if not isinstance(answer, dict) or "output" not in answer:
        raise RuntimeError("the grader sent no output")
    return answer["output"]


def _portable(t: torch.Tensor) -> torch.Tensor:
    """What travels to the grader: a copy on the CPU, or the tensor itself on `meta` (shape and dtype
    only; the reference part then runs on `meta` too, in the device-placement checks)."""
    return t.detach() if t.device.type == "meta" else t.detach().cpu()


def _to(v, device):
    if isinstance(v, torch.Tensor):
        return v.to(device) if device is not None else v
    if type(v) in (list, tuple):
        return type(v)(_to(x, device) for x in v)
    return v
