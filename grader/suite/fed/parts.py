"""The submission's parts in the reference's composite (grader.suite.fed.composite): each built and called in
the worker, through autograd where gradients are on, its answers held to the reference part's form; and
the objects of the worker's that a check hands to that composite (Theirs)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from grader.sandbox.child import protocol
from grader.suite.fed.forms import Formless, Unsupported, entries, fitted, meta, refuse_callables, signature
from grader.suite.fed.mirror import Shadow, changed, mirror

if TYPE_CHECKING:
    from grader.suite.fed.composite import Fed


@dataclass(frozen=True)
class Call:
    """One call of a part through autograd (Through): where it goes and what the reference's gives."""

    fed: "Fed"
    target: object  # a contract name, or the handle of `own`
    own: "Own | None"
    args: tuple
    kwargs: dict
    like: object  # the reference part's output on these inputs, on meta (Fed._like)


class Own(Shadow):
    """The submission's part, built and called in the worker, as a module of the reference's composite:
    its parameters mirrored here (grader.suite.fed.mirror), the rest of it the worker's (reading it is
    Unsupported, as of a Shadow)."""

    _kit_fed: "Fed"
    _kit_target: str

    def __init__(self, *args, **kwargs):
        super().__init__()
        refuse_callables((args, kwargs))
        try:
            with self._kit_fed.unpatched(), torch.device("meta"):  # for the shapes its outputs have (Fed._like)
                twin = self._kit_fed.originals[self._kit_target](*args, **kwargs)
        except Exception as e:
            raise Unsupported(f"the reference's part is not built from these arguments: {type(e).__name__}") from None
        object.__setattr__(self, "twin", twin)  # not a submodule: its weights are none of the composite's
        try:  # what its twin was built from: the forms of its outputs follow from it (Fed._like)
            self.built = signature((args, kwargs))
        except Formless:
            self.built = None
        self.remote = self._kit_fed.ask(self._kit_target, args, kwargs)
        if not isinstance(self.remote, protocol.Handle):
            raise Unsupported("the submission's part did not build an object")
        request = self._kit_fed.submission._request
        listing = entries(request({"op": "params", "target": self.remote}), "parameters")
        if not all(len(e) == 4 and type(e[1]) is list for e in listing):
            raise Unsupported("the part's 'parameters' are not a listing")
        self.held = mirror(self, listing, request({"op": "state", "target": self.remote}), twin)
        self._kit_fed.owns.append(self)

    def took(self, loaded: dict[str, torch.Tensor]) -> None:
        """The worker's part took `loaded` (op "load"): so do the mirrors."""
        with torch.no_grad():
            for name, value in loaded.items():
                if name in self.held and self.held[name].shape == value.shape:
                    self.get_parameter(name).copy_(value)
                    self.held[name] = self.get_parameter(name).detach().clone()

    def sync(self) -> None:
        """What the reference's composite changed of the mirrored parameters, to the worker's part."""
        news = changed(self, self.held)
        if news:
            answer = self._kit_fed.submission._request({"op": "load", "target": self.remote, "tensors": news})
            if entries(answer, "missing", str) or entries(answer, "wrong_shape"):
                raise Unsupported("the submission's part did not take its own parameters back")

    def __deepcopy__(self, memo):
        raise Unsupported("a copy of the submission's part (the clones idiom): the copy would share its module")

    def train(self, mode: bool = True):
        super().train(mode)
        if "remote" in vars(self):  # not while its own __init__ runs
            self._kit_fed.submission._request({"op": "call", "target": self.remote, "method": "train",
                                               "args": [mode], "kwargs": {}, "grad": False})
        return self

    def forward(self, *args, **kwargs):
        return self._kit_fed.run(self.remote, args, kwargs, own=self)


class Theirs:
    """An object of the worker's that a check hands to the reference's composite (a sublayer it built
    there, the model greedy decoding runs), called and read there. Handed as an argument (`sublayer`), its
    answer must have the form of its first tensor argument, as a sublayer's has (student-api: a callable
    mapping (B, T, d_model) to (B, T, d_model)); what is read of it (`model.pad_idx`, `model.encode`) and
    what that answers may be any plain value within `loose`'s bounds, never with gradients."""

    def __init__(self, fed: "Fed", remote: protocol.Handle, sublayer: bool = True):
        self.fed, self.remote, self.sublayer = fed, remote, sublayer

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("fed", "remote", "sublayer"):
            raise AttributeError(name)
        value = self.fed.submission._request({"op": "getattr", "target": self.remote, "name": name})
        return loose(self.fed, value)

    def __call__(self, *args, **kwargs):
        like = next((meta(a) for a in args if isinstance(a, torch.Tensor)), None)
        if self.sublayer and like is not None:
            return self.fed.run(self.remote, args, kwargs, like=like)
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                           for a in (*args, *kwargs.values())):
            raise Unsupported("an object of the worker's called with gradients, whose answer has no known form")
        return loose(self.fed, self.fed.ask(self.remote, args, kwargs))


MAX_LOOSE_NUMEL, MAX_LOOSE_DEPTH = 1 << 20, 4


def loose(fed: "Fed", value, depth: int = 0):
    """What an object of the worker's answered, where no reference's part says its form: plain tensors of at
    most MAX_LOOSE_NUMEL elements, numbers, short strings, None, the worker's objects (as Theirs), and
    lists and tuples of those; else Unsupported."""
    if type(value) is torch.Tensor and value.numel() <= MAX_LOOSE_NUMEL and not value.requires_grad:
        return value
    if value is None or type(value) in (bool, int, float) or type(value) is str and len(value) <= 200:
        return value
    if isinstance(value, protocol.Handle) and value.id > 0:
        return Theirs(fed, value, sublayer=False)
    if type(value) in (list, tuple) and depth < MAX_LOOSE_DEPTH and len(value) <= 64:
        return type(value)(loose(fed, v, depth + 1) for v in value)
    raise Unsupported("an object of the worker's answered what the grader does not take there")


class Through(torch.autograd.Function):
    """A call of the submission's part as one node of the composite's graph: its backward is the
    worker's (op "backward"), whose parameter gradients the part keeps for the composite's."""

    @staticmethod
    def forward(ctx, call: Call, anchor, *leaves):
        fed, args = call.fed, call.args
        ctx.fed, ctx.target, ctx.own, ctx.kwargs = fed, call.target, call.own, call.kwargs
        ctx.rng = torch.get_rng_state()  # the backward runs the part again: on the same draws
        ctx.args = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
        ctx.wrt = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
        if not isinstance(call.like, torch.Tensor):
            raise Unsupported("a part whose output is not one tensor, with gradients on")
        return fitted(fed.ask(call.target, tuple(ctx.args), call.kwargs), call.like, arranged=True)

    @staticmethod
    def backward(ctx, grad):
        fed, target = ctx.fed, ctx.target
        answer = fed.submission._request({"op": "backward", "target": target, "method": None,
                                          "args": fed.handed(list(ctx.args)), "kwargs": fed.handed(ctx.kwargs),
                                          "grad_output": grad, "wrt": ctx.wrt, "rng": ctx.rng})
        grads = answer.get("input_grads") if isinstance(answer, dict) else None
        grads = [None] * len(ctx.wrt) if grads is None else grads
        if not isinstance(grads, list) or len(grads) != len(ctx.wrt):
            raise Unsupported("the part's backward did not answer one gradient per input")
        grads = [None if g is None else fitted(g, ctx.args[i]) for g, i in zip(grads, ctx.wrt, strict=True)]
        params = answer.get("param_grads") or {}
        if ctx.own is not None and isinstance(params, dict):
            for name, g in params.items():  # onto the mirrored parameters (the composite's gradients)
                p = ctx.own.held.get(name) if isinstance(name, str) else None
                if p is not None and g is not None:
                    g = fitted(g, p)
                    mirrored = ctx.own.get_parameter(name)
                    mirrored.grad = g if mirrored.grad is None else mirrored.grad + g
        return (None, None, *grads)
