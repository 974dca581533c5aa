"""Stand-ins for a composite's parts, worker side: the reference's parts run in the grader.

An isolated check grades a composite (an EncoderLayer, say) on the reference's versions of
the parts it builds on. The reference never enters the submission's process: the grader
describes the reference module's tree as data (class names, torch.nn constructor arguments,
plain attributes, tensors) and the stand-in is built from it, so that code written against
the contract's structure (`self.residuals[0].norm(x)`, `isinstance(m, nn.Linear)`,
`self.self_attn.n_heads`) runs on it. torch.nn built-ins are real instances of their class;
the kit's own modules are stand-ins which, when called, ask the grader to run the reference's
module at their place with their subtree's weights. Gradients flow through them
(grader.sandbox.child.standins.gradients). A plain class (a Vocab) stands in as a class with the
reference's plain class attributes whose instances hold the built object's data attributes
and call its methods in the grader.
"""

import weakref

import torch
from torch import nn

from grader.sandbox.child import record
from grader.sandbox.child.standins import owned
from grader.sandbox.child.standins.calls import Arguments, Call, _output, _portable, _to, _wrap_callables
from grader.sandbox.child.standins.gradients import Recorder, Through, fill, split
from grader.sandbox.child.standins.values import checked_name as _name
from grader.sandbox.child.standins.values import plain, plain_class

# torch.nn classes rebuilt as themselves from the constructor arguments the grader sends;
# any other torch module is a stand-in like the kit's own
TORCH = {c.__name__: c for c in (nn.Linear, nn.Dropout, nn.Embedding, nn.LayerNorm, nn.ModuleList, nn.Sequential,
                                 nn.ReLU, nn.GELU, nn.Identity, nn.Tanh, nn.Sigmoid)}


# the classes Link.wrap made: stand-ins that run the submission's own forward; _ECHOED: those of them
# reached as the reference's are, a round trip to the grader at each build and call (Link.echo)
_OWN: "weakref.WeakSet[type]" = weakref.WeakSet()
_ECHOED: "weakref.WeakSet[type]" = weakref.WeakSet()


class StandIn(nn.Module):
    """A module of the reference's whose forward runs in the grader, at `_kit_path` of built tree `_kit_build`;
    or, in a class `Link.wrap` made (the submission's own part, dressed as a stand-in), the submission's forward."""

    _kit_link: "Link"
    _kit_build: int
    _kit_path: str

    def __init__(self, *args, **kwargs):
        if type(self) in _OWN:
            # reached from the submission's own __init__ by `super(ItsClass, self).__init__()`, where its
            # module's name for the class now names the wrapper (MRO: wrapper, StandIn, its class, ...):
            # what that call meant, the __init__ after its class
            own: type = type(self).__mro__[2]
            super(own, self).__init__(*args, **kwargs)  # type: ignore[arg-type]
        else:
            nn.Module.__init__(self)

    def forward(self, *args, **kwargs):
        if type(self) in _OWN:
            if type(self) in _ECHOED:
                self._kit_link.echo(self, args, kwargs)
            return super().forward(*args, **kwargs)  # the next forward in the MRO: the submission's class's
        return self._kit_link.run(self, {"forward": self._kit_build, "path": self._kit_path}, args, kwargs)


record.passes_through(StandIn.forward.__code__)


def _dress(made, like, name: str):
    """Give `made` (a class or function) the identity of the submission's `like`, where there is one: its
    name, qualified name, module (hence inspect's source file) and docstring. The composite then sees
    the same names whether a part is its own (Link.wrap) or the reference's (Link.stand_in)."""
    made.__name__ = made.__qualname__ = name
    if like is not None:
        for key in ("__name__", "__qualname__", "__module__", "__doc__"):
            value = getattr(like, key, None)
            if type(value) is str:
                setattr(made, key, value)
        if not isinstance(made, type):
            made.__wrapped__ = like  # inspect.signature shows the submission's own parameters, on either
    return made


class Link:
    """The worker's end of the stand-ins: builds them and asks the grader to run them."""

    def __init__(self, ask, known):
        self.ask = ask  # message -> the grader's answer
        self.known = known  # part -> the class standing in for it in this check, or None
        self.classes: dict[str, type] = {}
        self.built = 0  # build ids of the submission's own parts (the grader numbers the reference's)
        self.freed: list[int] = []  # grader-side graphs no longer needed, sent with the next request

    def send(self, message: dict):
        if self.freed:
            message["free"] = self.freed[:]
            self.freed.clear()  # in place: finalizers of pending calls hold this list
        return self.ask(message)

    def reset(self):
        self.freed.clear()  # the grader drops every graph of the check itself

    def echo(self, module: nn.Module | None, args: tuple, kwargs: dict):
        """The round trip a stand-in's build or call makes, for the submission's own part in the
        attribution's control run (grader.judging.attribution): its inputs and weights travel to the
        grader, which answers without running anything; the part then runs here. A composite that
        behaves otherwise when its parts are reached so is not excused."""
        _, inputs = split([list(args), kwargs])
        weights = [] if module is None else [*module.parameters(), *module.buffers()]
        self.send({"echo": [_portable(t) for t in [*inputs, *weights] if isinstance(t, torch.Tensor)]})

    def __deepcopy__(self, memo):
        return self  # copy.deepcopy(layer) (the "clones" idiom) copies a stand-in, never the worker

    def stand_in(self, part: str, info: dict | None = None, own=None):
        """A class or function to use in place of `part` ("assignment2.masks:make_pad_mask"); `info`:
        the grader's description of a class part (grader.suite.parts.serve.ReferenceParts.describe_class);
        `own`: the submission's own version of it, whose identity the stand-in takes (_dress), and, for a
        module, whose class it derives from (its methods other than forward and __init__ are not run
        on it by an honest composite), as `wrap`'s do: isinstance(x, own) holds either way."""
        name, link = part.rpartition(":")[2], self
        attrs = {_name(k): v for k, v in (info or {}).get("attrs", {}).items() if plain(v)}
        if info is not None and not info.get("module", True):
            return plain_class(self, part, name, attrs, info.get("methods", []))
        if name[:1].islower():
            return _dress(_function(lambda *args, **kwargs: link.run(None, {"call": part}, args, kwargs)),
                          own, name)
        base = own if _module_class(own) else None

        def __init__(self, *args, **kwargs):
            # built by the submission's own constructor first (owned.built_in_place), then the reference's
            mine = owned.built_in_place(self, base, args, kwargs) if base is not None else None
            nn.Module.__init__(self)
            answer = link.send({"build": part, "args": list(args), "kwargs": kwargs})
            if not isinstance(answer, dict) or type(answer.get("id")) is not int:
                raise RuntimeError("malformed description of a reference part")
            link.populate(self, answer.get("tree"), answer["id"], "")
            # its part's plain attributes, and none of the reference's its part lacks (a `d_model` it calls `dim`)
            owned.show_own(self, mine)

        Part = _dress(type(name, (StandIn,) if base is None else (StandIn, base), {"__init__": __init__}), own, name)
        for key, value in attrs.items():
            if not hasattr(Part, key):
                setattr(Part, key, value)
        return Part

    def wrap(self, own, echo: bool = False):
        """The submission's own part `own` (a module class or a function) dressed as `stand_in` dresses
        the reference's: the same kind of class (derived from StandIn and `own`) or function, with the
        same identity, so that a composite cannot tell which it has; it runs `own`'s code, after the
        round trip a stand-in makes where `echo` (Link.echo). None for anything else (a plain class),
        which is left as it is."""
        link = self
        if _module_class(own):

            class Part(StandIn, own):
                def __init__(self, *args, **kwargs):
                    if echo:
                        link.echo(None, args, kwargs)
                    own.__init__(self, *args, **kwargs)
                    link.built += 1
                    self._kit_link, self._kit_build, self._kit_path = link, link.built, ""

            _OWN.add(Part)
            if echo:
                _ECHOED.add(Part)
            record.passes_through(Part.__init__.__code__)  # where its tensors were made: the submission's lines
            return _dress(Part, own, own.__name__)
        if callable(own) and not isinstance(own, type) and type(getattr(own, "__name__", None)) is str:
            def call(*args, **kwargs):
                if echo:
                    link.echo(None, args, kwargs)
                return own(*args, **kwargs)

            record.passes_through(call.__code__)  # the frames below it, the submission's, stay one chain
            return _dress(_function(call), own, own.__name__)
        return None

    # building ------------------------------------------------------------------------------

    def populate(self, module: StandIn, node, build: int, path: str):
        """Give `module` the parameters, buffers, attributes and submodules of a described node."""
        node = _node(node)
        module._kit_link, module._kit_build, module._kit_path = self, build, path
        for key, value in node["attrs"].items():
            if not plain(value) or hasattr(StandIn, _name(key)):
                raise RuntimeError(f"malformed attribute {key!r} of a reference part")
            try:
                setattr(module, key, value)
            except (AttributeError, TypeError):  # a property of the submission's class (the stand-in derives from it)
                pass
        for key, value in node["parameters"].items():
            module.register_parameter(_name(key), nn.Parameter(_tensor(value)))
        for key, value in node["buffers"].items():
            module.register_buffer(_name(key), _tensor(value), persistent=key in node["persistent"])
        self._children(module, node, build, path)

    def make(self, node, build: int, path: str) -> nn.Module:
        """The module a described node stands for: a torch.nn built-in or a stand-in."""
        node = _node(node)
        if not node["torch"]:
            cls: type[StandIn] | None = self.known(node["part"]) if type(node["part"]) is str else None
            if cls is None:
                key = f"{node['part']}/{node['class']}"
                cls = self.classes.setdefault(key, type(_name(node["class"]), (StandIn,), {}))
            stand_in = cls.__new__(cls)  # not cls(...): a swapped class would ask to build itself again
            # a part nested in the reference's, dressed as the submission's own: built by its own constructor
            # first, then the reference's, with the same names as its own
            mine = cls.__bases__[-1] if len(cls.__bases__) == 2 and cls.__bases__[0] is StandIn else None
            kwargs = owned.arguments(mine, node["attrs"]) if mine is not None else None
            found = owned.built_in_place(stand_in, mine, (), kwargs) if kwargs is not None else None
            StandIn.__init__(stand_in)
            self.populate(stand_in, node, build, path)
            owned.show_own(stand_in, found)
            return stand_in
        if node["class"] not in TORCH or not all(plain(v) for v in node["kwargs"].values()):
            raise RuntimeError(f"no torch.nn.{str(node['class'])[:40]} with these arguments")
        with torch.random.fork_rng(devices=[]):  # the submission's own seeded init stays as it was
            module = TORCH[node["class"]](**node["kwargs"])
        own = {k: v for k, v in {**module._parameters, **module._buffers}.items() if v is not None}
        given = {**node["parameters"], **node["buffers"]}
        if set(own) != set(given):
            raise RuntimeError(f"the tensors of a reference {node['class']} do not match its arguments")
        with torch.no_grad():
            for key, value in given.items():
                if _tensor(value).shape != own[key].shape:
                    raise RuntimeError(f"{node['class']}.{key} has the wrong shape")
                own[key].copy_(value)
        self._children(module, node, build, path)
        return module

    def _children(self, module, node, build, path):
        for pair in node["modules"]:
            if type(pair) is not list or len(pair) != 2:
                raise RuntimeError("malformed description of a reference part")
            key = _name(pair[0], digits=True)
            module.add_module(key, self.make(pair[1], build, f"{path}.{key}" if path else key))

    # running -------------------------------------------------------------------------------

    def run(self, module: StandIn | None, head: dict, args: tuple, kwargs: dict):
        """Run the reference's part named by `head` on these inputs and `module`'s weights (a
        function has none); through an autograd Function when gradients are wanted."""
        skeleton, inputs = split([list(args), kwargs])
        weights = {} if module is None else {**dict(module.named_parameters()), **dict(module.named_buffers())}
        device = next((t.device for t in [*inputs, *weights.values()]), None)
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in [*inputs, *weights.values()])
        recorders: list[Recorder] = []
        skeleton = _wrap_callables(skeleton, device, grad, recorders)
        message = {**head, "grad": grad}
        if module is not None:
            message["state"] = {k: _portable(w) for k, w in weights.items()}
            message["training"] = {k: m.training for k, m in module.named_modules()}
        if not grad:
            message["args"], message["kwargs"] = fill(skeleton, [_portable(t) for t in inputs])
            answer = self.send(message)
            self.set_attrs(module, answer, device)
            return _to(_output(answer), device)
        params = {k: w for k, w in weights.items() if isinstance(w, nn.Parameter) and w.requires_grad}
        message["params"] = list(params)
        message["callbacks"] = [[r, r.backprop] for r in recorders]
        call = Call(self, module, message, Arguments(skeleton, inputs, recorders), list(params.values()), device)
        return call.output(Through.apply(call, *inputs, *params.values()))

    def set_attrs(self, module: StandIn | None, answer: dict, device):
        """Keep the tensors the reference set during forward (MultiHeadAttention's attention_weights)
        on the stand-ins at the same places."""
        attrs = answer.get("attrs") if isinstance(answer, dict) else None
        if module is None or not isinstance(attrs, dict):
            return
        for path, values in attrs.items():
            try:
                target = module.get_submodule(path)
            except (AttributeError, TypeError):
                continue
            if not isinstance(target, StandIn) or not isinstance(values, dict):
                continue
            for key, value in values.items():
                taken = {*target._parameters, *target._buffers, *target._modules}
                if isinstance(value, torch.Tensor) and key not in taken and not hasattr(StandIn, _name(key)):
                    try:
                        setattr(target, key, _to(value, device))
                    except (AttributeError, TypeError):  # a property of the submission's class
                        pass


def _module_class(v) -> bool:
    return isinstance(v, type) and issubclass(v, nn.Module) and not issubclass(v, StandIn)


def _function(call):
    """One code object for a part that is a function, the reference's and the submission's alike."""
    def function(*args, **kwargs):
        return call(*args, **kwargs)

    record.passes_through(function.__code__)
    return function


NODE: dict[str, type | tuple[type, ...]] = {
    "class": str, "part": (str, type(None)), "torch": bool, "kwargs": dict, "attrs": dict, "parameters": dict,
    "buffers": dict, "persistent": list, "modules": list}


def _node(node) -> dict:
    if not isinstance(node, dict) or any(not isinstance(node.get(k), t) for k, t in NODE.items()):
        raise RuntimeError("malformed description of a reference part")
    return node


def _tensor(v) -> torch.Tensor:
    if type(v) is not torch.Tensor:
        raise RuntimeError("a reference part's tensor did not arrive as a tensor")
    return v
