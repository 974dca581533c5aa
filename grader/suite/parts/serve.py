"""The reference's parts, served to the stand-ins in the submission's process.

An isolated check swaps the reference's versions of a composite's parts in for the
submission's own; the stand-ins (grader.sandbox.child.standins.standin) ask for them here: "build"
gets a description of the reference module's tree (data only: class names, constructor
arguments, attributes, tensors; never code), "forward" and "call" run the reference at a
place in that tree on the stand-in's own weights, and "backward" gives the vector-Jacobian
product of a call made with gradients, whose graph is kept here until the check ends. A part
that is a plain class (a Vocab) is kept here once built: its stand-in gets its data
attributes, and "method" runs its methods here.
"""

import itertools
from typing import Any

import torch
from torch import nn

from grader.sandbox.child import protocol, state
from grader.sandbox.child.placement import watch
from grader.sandbox.child.standins.gradients import fill, split
from grader.sandbox.child.standins.values import data, plain
from grader.sandbox.child.tree import resolve
from grader.suite.callback import Callback, SublayerCall
from grader.suite.parts.described import describe, methods
from grader.suite.parts.layout import Layout, changed, on_weights, tensor_attrs
from grader.suite.parts.sizing import Sized
from grader.suite.reference import PACKAGE, load


class ReferenceParts:
    """Answers the worker's stand-ins: builds and runs the reference's parts.

    Only the parts swapped in by the current check are served, with bounded sizes; every
    request comes from the submission's process, so each is checked before it is served."""

    MAX_INT = 10_000
    MAX_NUMEL = 20_000_000  # elements of one part built, or of one call's inputs and weights
    MAX_GRAPHS = 4096
    # what the submission can make the grader hold (it asks for parts, never frees them): the parts built
    # in one check and the graphs kept in it, and the modules cached for the whole grading
    MAX_CHECK_NUMEL = 20_000_000  # 80 MB of float32; an honest grading builds parts of thousands
    MAX_CACHED_NUMEL = 5_000_000
    # the tensors one part's build may make (a module per layer: a stacked encoder of 10,000 layers),
    # and the elements of all the parts a grading builds (each build's time, bounded as a whole)
    MAX_TENSORS, MAX_GRADING_NUMEL = 4096, 400_000_000

    def __init__(self, call_back):
        self.call_back = call_back  # (handle, *args) -> what the submission's callable returns
        self.allowed: set[str] = set()
        self.built: dict[int, Any] = {}  # modules, and instances of plain classes
        # (part, arguments) -> the module built from them, its description and the CPU generator's state
        # after it: a check's examples build the same parts again and again
        self.modules: dict[str, tuple[nn.Module, dict, torch.Tensor]] = {}
        self.kept: set[int] = set()  # ids of the cached modules and their submodules (whose layouts outlive a check)
        self.layouts: dict[int, Layout] = {}  # id of a module served -> its layout (which holds it)
        self.graphs: dict[int, tuple[list, list, list, list]] = {}  # call -> outputs, input/param leaves, anchors
        self.ids = itertools.count(1)  # never reused: a stale id from an earlier check names nothing
        self.package = PACKAGE
        self.held = 0  # elements of the parts built and the graphs kept in this check
        self.cached = 0  # elements of the modules in self.modules
        self.grading_built = 0  # elements the parts built in this grading made (a bound: MAX_GRADING_NUMEL)

    def allow(self, reference, parts):
        if reference is not None:
            self.package = load(reference)
            # what meta kernels import on first use, now: the grader's time answering asks is charged
            # to the submission (grader.sandbox.host), and this is no part of it
            watch.warm()
        parts = set(parts)
        if not parts or not parts >= self.allowed:  # a new check: what the last one built and kept goes
            self.built.clear()
            self.graphs.clear()
            self.held = 0
            # a layout holds its module: only the cached modules' outlive their check
            self.layouts = {k: v for k, v in self.layouts.items() if k in self.kept}
        self.allowed = parts

    def _target(self, part):
        if part not in self.allowed:
            raise ValueError(f"{str(part)[:80]!r} is not a part of this check")
        return resolve(self.package, part)

    def answer(self, message: dict):
        if not isinstance(message, dict):
            raise ValueError("malformed request")
        self._free(message.get("free", []))
        if "backward" in message:
            return self._backward(message)
        if "echo" in message:  # the attribution's control run (standins.Link.echo): nothing to run
            return {"echo": len(message["echo"]) if isinstance(message["echo"], list) else 0}
        args, kwargs = message.get("args", []), message.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ValueError("malformed arguments")
        if "build" in message:
            return self._build(message["build"], args, kwargs)
        if "forward" in message:
            module = self._place(message["forward"], message.get("path"))
            layout = self.layouts.get(id(module))
            if layout is None:
                layout = self.layouts[id(module)] = Layout.of(module)
            weights = self._weights(layout, message.get("state"), message.get("training"))
            return self._run(lambda *a, **k: _on(module, layout, weights, a, k), layout, weights, message, args,
                             kwargs)
        if "call" in message:
            return self._run(self._target(message["call"]), None, {}, message, args, kwargs)
        if "method" in message:
            return self._run(self._method(message.get("object"), message["method"]), None, {}, message, args, kwargs)
        raise ValueError("unknown request")

    def describe_class(self, part: str) -> dict | None:
        """What the stand-in of class `part` needs before it is built: whether it is a module, its
        plain class attributes (Vocab.PAD, which the submission's code may read from the class),
        and, for a plain class, the methods forwarded here. None for a function."""
        cls = self._target(part)
        if not isinstance(cls, type):
            return None
        module = issubclass(cls, nn.Module)
        return {"module": module, "attrs": {k: v for k, v in vars(cls).items() if not k.startswith("_") and plain(v)},
                "methods": [] if module else methods(cls)}

    def _method(self, build, name):
        obj = self.built.get(build) if type(build) is int else None
        if obj is None or isinstance(obj, nn.Module) or type(name) is not str or name not in methods(type(obj)):
            raise ValueError("no such method of a part in this check")
        return getattr(obj, name)

    def _build(self, part, args, kwargs):
        if any(type(v) is int and abs(v) > self.MAX_INT for v in [*args, *kwargs.values()]):
            raise ValueError(f"sizes above {self.MAX_INT} are not served")
        cls = self._target(part)
        if not isinstance(cls, type):
            raise ValueError(f"{part!r} is not a class")
        key = repr((part, args, kwargs)) if all(map(plain, [*args, *kwargs.values()])) else None
        if key in self.modules:  # the same module, description and random state as building it again
            module, tree, after = self.modules[key]
            self._hold(sum(t.numel() for t in module.state_dict().values()))
            state.seed(0)
            torch.default_generator.set_state(after)
            build = next(self.ids)
            self.built[build] = module
            return {"id": build, "tree": tree}
        args, kwargs = self._callables([args, kwargs], {}, None)
        state.seed(0)
        sized = Sized(min(self.MAX_NUMEL, self.MAX_GRADING_NUMEL - self.grading_built), self.MAX_TENSORS)
        try:
            with sized:  # each tensor sized on meta before it is made: the build stops at the bound
                module = cls(*args, **kwargs)
        finally:
            self.grading_built += sized.numel
        if not isinstance(module, nn.Module):  # a plain object: kept here, its data attributes described
            build = next(self.ids)
            self.built[build] = module
            return {"id": build, "object": {k: v for k, v in vars(module).items()
                                            if not k.startswith("_") and data(v)}}
        numel = sum(t.numel() for t in module.state_dict().values())
        if numel > self.MAX_NUMEL:
            raise ValueError("part too large")
        self._hold(numel)
        build = next(self.ids)
        self.built[build] = module
        tree = describe(module, self.package + ".")
        if key is not None and self.cached + numel <= self.MAX_CACHED_NUMEL:  # past it: built again each time
            self.modules[key] = (module, tree, torch.default_generator.get_state())
            self.kept.update(id(m) for m in module.modules())
            self.cached += numel
        return {"id": build, "tree": tree}

    def _hold(self, numel: int) -> None:
        if self.held + numel > self.MAX_CHECK_NUMEL:
            raise ValueError(f"parts and graphs of more than {self.MAX_CHECK_NUMEL:,} elements in one check")
        self.held += numel

    def _place(self, build, path) -> nn.Module:
        if (type(build) is not int or not isinstance(self.built.get(build), nn.Module) or type(path) is not str
                or len(path) > 500):
            raise ValueError("no such part in this check")
        return self.built[build].get_submodule(path)

    @staticmethod
    def _weights(own: Layout, state, training) -> dict:
        """The stand-in's weights, which must be the reference module's names and shapes, and its
        submodules' train/eval flags, set on the reference's."""
        if (not isinstance(state, dict) or state.keys() != own.weights.keys()
                or any(type(v) is not torch.Tensor or v.shape != own.weights[k][0]
                       or v.is_floating_point() != own.weights[k][1] for k, v in state.items())):
            raise ValueError("the weights do not match the reference part's")
        modules = own.modules
        if not isinstance(training, dict) or any(k not in modules or type(v) is not bool for k, v in training.items()):
            raise ValueError("malformed train/eval flags")
        for k, flag in training.items():
            modules[k].training = flag
        return dict(state)

    def _run(self, fn, layout: Layout | None, weights: dict, message: dict, args: list, kwargs: dict):
        grad = message.get("grad") is True
        skeleton, inputs = split([args, kwargs])
        if sum(t.numel() for t in [*inputs, *weights.values()]) > self.MAX_NUMEL:
            raise ValueError("inputs too large")
        inputs = [t.detach().requires_grad_() if grad and t.is_floating_point() else t for t in inputs]
        params = self._leaves(weights, message.get("params")) if grad else []
        # the sublayers run in the submission's process: their output needs a gradient even
        # when nothing here does (the sublayer's own parameters live there)
        anchors = [torch.zeros((), requires_grad=True)] if grad else []
        callbacks = self._callback_pairs(message.get("callbacks", [])) if grad else {}
        args, kwargs = fill(self._callables(skeleton, callbacks, anchors[0] if grad else None), inputs)
        before = tensor_attrs(layout)
        with torch.set_grad_enabled(grad):
            output = fn(*args, **kwargs)
        out_skeleton, outputs = split(output)
        answer = {"output": fill(out_skeleton, [t.detach() for t in outputs]), "attrs": changed(layout, before)}
        if grad:
            if len(self.graphs) >= self.MAX_GRAPHS:
                raise ValueError(f"more than {self.MAX_GRAPHS} calls with gradients kept at once")
            self._hold(sum(t.numel() for t in [*inputs, *outputs]))
            answer["call"] = next(self.ids)
            self.graphs[answer["call"]] = (outputs, [t if t.requires_grad else None for t in inputs], params,
                                           anchors)
        return answer

    @staticmethod
    def _leaves(weights: dict, names) -> list[torch.Tensor]:
        """Make the named weights leaves of this call's graph (in place in `weights`)."""
        if not isinstance(names, list) or any(type(n) is not str or n not in weights for n in names) \
                or len(set(names)) != len(names):
            raise ValueError("malformed parameter names")
        for n in names:
            if not weights[n].is_floating_point():
                raise ValueError(f"{n} cannot have a gradient")
            weights[n] = weights[n].detach().requires_grad_()
        return [weights[n] for n in names]

    @staticmethod
    def _callback_pairs(pairs) -> dict[int, protocol.Handle]:
        if not isinstance(pairs, list) or any(type(p) is not list or len(p) != 2 or not all(
                isinstance(h, protocol.Handle) for h in p) for p in pairs):
            raise ValueError("malformed callbacks")
        return {run.id: backprop for run, backprop in pairs}

    def _callables(self, v, callbacks: dict, anchor):
        """The submission's callables (handles) in `v` as functions that call them back."""
        if isinstance(v, protocol.Handle):
            if v.id in callbacks:
                calls = itertools.count()
                return lambda *args: Callback.apply(SublayerCall(self.call_back, v, callbacks[v.id], next(calls)),
                                                    anchor, *args)
            return lambda *args: self.call_back(v, *args)
        if type(v) in (list, tuple):
            return type(v)(self._callables(x, callbacks, anchor) for x in v)
        if type(v) is dict:
            return {k: self._callables(x, callbacks, anchor) for k, x in v.items()}
        return v

    def _backward(self, message: dict) -> dict:
        call = message["backward"]
        graph = self.graphs.get(call) if type(call) is int else None
        if graph is None:
            raise ValueError("no graph kept for this call")
        outputs, inputs, params, anchors = graph
        grads = message.get("grads")
        if type(grads) is not list or len(grads) != len(outputs) or any(
                g is not None and (type(g) is not torch.Tensor or g.shape != o.shape)
                for g, o in zip(grads, outputs, strict=True)):
            raise ValueError("malformed gradients")
        pairs = [(o, g.to(o.dtype)) for o, g in zip(outputs, grads, strict=True) if g is not None and o.requires_grad]
        leaves = [t for t in [*inputs, *params, *anchors] if t is not None]
        # retained: the submission may run backward through this call again (retain_graph),
        # and train-mode dropout must keep the mask it drew in forward
        got = iter(torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], retain_graph=True,
                                       allow_unused=True) if pairs else [None] * len(leaves))
        return {"inputs": [None if t is None else next(got) for t in inputs], "params": [next(got) for _ in params]}

    def _free(self, calls):
        if not isinstance(calls, list) or any(type(c) is not int for c in calls):
            raise ValueError("malformed list of calls to free")
        for c in calls:
            self.graphs.pop(c, None)


def _on(module: nn.Module, layout: Layout, weights: dict, args, kwargs):
    with on_weights(layout, weights):
        return module(*args, **kwargs)
