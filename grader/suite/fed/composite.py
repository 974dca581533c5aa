"""The reference's composite, in the grader, fed the submission's parts: what excuses a composite's failure.

A composite (a TransformerEmbedding) fails a check and one of its parts (a TokenEmbedding) fails its own.
That the composite passes on the reference's parts (grader.suite.parts) shows only how it behaves where
it *meets* the reference's parts, and a composite can tell those from its own: a stand-in's call is a
round trip, its own part keeps a counter. Here the composite is swapped instead: the check runs on the
reference's composite, built and run in the grader, whose failing parts are the submission's, built and
called in the worker. Nothing of the submission's composite runs, so nothing of it can tell. Where this
run fails as the submission's own run failed, the parts' outputs explain the failure
(grader.judging.attribution decides from the two outcomes).

The reference is imported here a second time, as its own package (FED), so that the parts put into its
modules never reach the reference the checks compute expected values with. A callable the reference's
composite hands to a part (ResidualConnection's sublayer) goes to the worker as a handle, and the worker
asks for it to be run here (grader.suite.fed.handing; grader.sandbox.child.asked); an object of the
worker's handed to the composite (a sublayer the check built there) is called there (Theirs). Both sides
draw from one random stream, as the submission's own run drew in one process: the generator's state
travels with each call of a part and comes back with its answer. A part's parameters are mirrored here
(grader.suite.fed.mirror), so that the composite initialises and reads them as its own. A request this
run cannot serve in the grader (a placed run, a profile, a part that is a plain class, a copy of a part,
a part's buffers or attributes read by the composite) is `Unsupported`: that check has no evidence of
this kind, and the control run decides it as before.
"""

import contextlib
import sys
import traceback
from pathlib import Path

import torch
from torch import nn

from grader.sandbox.child import protocol, state
from grader.sandbox.child.fixtures import IMPORTS
from grader.sandbox.child.tree import import_alone, import_tree, resolve
from grader.sandbox.faults import StudentError
from grader.suite.fed.forms import Formless, Unsupported, entries, fitted, meta, signature
from grader.suite.fed.handing import Handing
from grader.suite.fed.parts import Call, Own, Theirs, Through

PACKAGE = "_kit_fed"
LOCAL = -1  # local objects' ids count down from here: the worker's count up from 1
# the reference parts' outputs on meta, by part and the forms of its inputs (Fed._like): the reference is
# loaded once per process (_load), so they hold for every check
LIKE: dict[tuple, object] = {}
MAX_LIKE = 4096


def _dtype(t: torch.Tensor) -> str:
    return protocol.DTYPE_NAMES.get(t.dtype, str(t.dtype))


def _ours(e: BaseException) -> bool:
    """Whether `e` was raised in this package's own lines (a fault of the grader's, not the reference's)."""
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and Path(frames[-1].filename).parent == Path(__file__).parent


def _load(reference: Path) -> None:
    """The reference as package FED, every module imported: the parts are put in and taken out again per
    request, and a module imported between those would keep them."""
    if PACKAGE in sys.modules:
        return
    import_tree(reference, PACKAGE)
    for path in sorted(Path(reference).glob("assignment*/*.py")):
        module = ".".join(path.relative_to(reference).with_suffix("").parts).removesuffix(".__init__")
        import_alone(f"{PACKAGE}.{module}", PACKAGE)


class Fed(Handing):
    """One check's fed run: the reference's composite here, the submission's `parts` in the worker."""

    def __init__(self, submission, reference: Path, parts: tuple[str, ...]):
        _load(reference)
        self.submission, self.parts = submission, parts
        self.objects: dict[int, object] = {}
        self.ours: dict[int, int] = {}  # id(object) -> its local id: one object, one handle
        self.originals = {part: resolve(PACKAGE, part) for part in parts}
        self.made = {part: self._own(part) for part in parts}
        self.patched: list[tuple[object, str, object]] = []  # (module, name, original) while a request is served
        self.sites: list[tuple[object, str, object]] | None = None  # the same, found once (_patch)
        # in the request served: the forms of the tensors handed to parts (what their asks may hand back), and
        # the graphs of the callables run here with gradients, kept for the asks for their backward
        self.forms: set[tuple[tuple[int, ...], torch.dtype]] = set()
        self.graphs: list[tuple[list, torch.Tensor]] = []
        self.callables: set[int] = set()  # the ids of this side's callables handed to parts
        self.owns: list[Own] = []  # every part built in the worker for this check
        self.serving = False  # in `serve`, whose requests to the worker sync the parts they reach themselves

    def sync(self) -> None:
        """The parts' mirrored parameters, as the reference's composite left them, to the worker: before
        a check's request reaches a part there (a part's handle, which the composite gave it)."""
        for own in self.owns:
            own.sync()

    def serves(self, message: dict) -> bool:
        target = message.get("target")
        if isinstance(target, protocol.Handle):
            return target.id <= LOCAL
        if isinstance(target, str) and target.removeprefix("kit:") in IMPORTS:
            # a kit harness that runs the submission's own stack in its process (the end-to-end training):
            # there the composite would be the submission's, its parts its own, and the run a replay of the
            # check's own run, which excuses nothing
            raise Unsupported(f"{target}, which runs the submission's composite in its process")
        return isinstance(target, str) and target.startswith("assignment") and target not in self.parts

    def serve(self, message: dict):
        op = message.get("op")
        handler = {"call": self._call, "getattr": self._getattr, "params": self._params, "state": self._state,
                   "load": self._load_state, "backward": self._backward}.get(str(op))
        if handler is None:
            raise Unsupported(f"{op!r} of the reference's composite")
        patched = self.patched = self._patch()
        self.forms.clear()
        self.graphs.clear()
        self.serving = True
        try:
            with torch.random.fork_rng(devices=[]):
                return self._export(handler(message))
        except (Unsupported, StudentError):
            raise
        except Exception as e:
            if _ours(e):  # this run's own code failed: no evidence, never "the reference's composite raised"
                raise Unsupported(f"the fed run's own code raised {type(e).__name__}") from None
            # the reference's composite raised on what the submission's parts gave it
            raise StudentError(type(e).__name__, [c.__name__ for c in type(e).__mro__], str(e), []) from None
        finally:
            self.serving = False
            for module, attr, original in reversed(patched):
                setattr(module, attr, original)

    # the submission's parts in the reference's modules -------------------------------------------

    def _own(self, part: str):
        original = self.originals[part]
        fed, name = self, part.rpartition(":")[2]
        if isinstance(original, type) and issubclass(original, nn.Module):
            return type(name, (Own,), {"_kit_fed": fed, "_kit_target": part})
        if isinstance(original, type) or not callable(original):
            raise Unsupported(f"{name}, a plain class, as a part")

        def call(*args, **kwargs):
            return fed.run(part, args, kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    @contextlib.contextmanager
    def unpatched(self):
        """The reference's own parts back in its modules for a while (a part's twin is the reference's
        all the way down, whichever parts are fed)."""
        for module, attr, original in reversed(self.patched):
            setattr(module, attr, original)
        try:
            yield
        finally:
            made = {id(self.originals[part]): own for part, own in self.made.items()}
            for module, attr, original in self.patched:
                setattr(module, attr, made[id(original)])

    def _patch(self) -> list[tuple[object, str, object]]:
        """The submission's parts put in the reference's modules: where the originals are, found once (every
        module of the reference is imported by then: _load)."""
        if self.sites is None:
            originals = {id(self.originals[part]) for part in self.made}
            self.sites = [(module, attr, value) for name, module in list(sys.modules.items())
                          if name.startswith(PACKAGE + ".") and module is not None
                          for attr, value in list(vars(module).items()) if id(value) in originals]
        replace = {id(self.originals[part]): made for part, made in self.made.items()}
        for module, attr, value in self.sites:
            setattr(module, attr, replace[id(value)])
        return self.sites

    def run(self, target, args: tuple, kwargs: dict, own: "Own | None" = None, like=None):
        """The submission's part `target` (a contract name, or the handle of `own`, a module, or of an object
        of the worker's whose answer is `like`) called in the worker on `args`: through autograd (the
        worker's vector-Jacobian product) where gradients are on. What comes back must be what the
        reference's part returns on those inputs, as far as shapes and dtypes go (its twin on the meta
        device, `_like`): the reference's composite then computes on it in the grader, which must not be
        made to compute on whatever the worker sends."""
        like = self._like(target if own is None else own, args, kwargs) if like is None else like
        if own is not None:
            own.sync()
        if torch.is_grad_enabled():
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in kwargs.values()):
                raise Unsupported("a tensor that wants gradients handed to a part by keyword")
            leaves = [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
            anchor = torch.zeros((), requires_grad=True)  # the part's own weights may want gradients
            return Through.apply(Call(self, target, own, args, kwargs, like), anchor, *leaves)
        return fitted(self.ask(target, args, kwargs), like, arranged=True)

    def _like(self, part, args: tuple, kwargs: dict):
        """What the reference's part returns on `args`, on the meta device: shapes and dtypes, no values. The
        same part (its name, the arguments it was built from, its mode) on inputs of the same forms gives
        the same: kept in LIKE (a part is called hundreds of times in a check, and a meta run of it costs
        about as much as its round trip to the worker)."""
        try:
            key = (part, signature((args, kwargs))) if not isinstance(part, Own) else None if part.built is None \
                else (part._kit_target, part.built, part.training, signature((args, kwargs)))
        except Formless:
            key = None
        if key is not None and key in LIKE:
            return LIKE[key]
        try:
            with torch.no_grad():
                if isinstance(part, Own):
                    like = part.twin.train(part.training)(*meta(args), **meta(kwargs))
                else:
                    like = self.originals[part](*meta(args), **meta(kwargs))
        except Exception as e:
            raise Unsupported(f"the reference's part does not run on these inputs (meta): {type(e).__name__}") from None
        if key is not None:
            if len(LIKE) >= MAX_LIKE:
                LIKE.clear()
            LIKE[key] = like
        return like

    def ask(self, target, args: tuple, kwargs: dict, rng: torch.Tensor | None = None):
        """The worker's answer to a call of `target`, from the generator's state here (or `rng`), which
        goes on from the worker's state after it."""
        answer = self.submission._request({"op": "call", "target": target, "method": None, "grad": False,
                                           "args": self.handed(list(args)), "kwargs": self.handed(kwargs),
                                           "rng": torch.get_rng_state() if rng is None else rng})
        if not (isinstance(answer, dict) and set(answer) == {"value", "rng"}):
            raise Unsupported("the worker's answer to a call of a part is not a value and the generator's state")
        self.resume(answer["rng"])
        return answer["value"]

    # the ops of grader.sandbox.child.worker.Worker, on the local composite ------------------------

    def _local(self, v):
        if isinstance(v, protocol.Handle):
            return self.objects[v.id] if v.id <= LOCAL else Theirs(self, v)
        if isinstance(v, torch.Tensor):
            return v.clone()
        if type(v) in (list, tuple):
            return type(v)(self._local(x) for x in v)
        if type(v) is dict:
            return {k: self._local(x) for k, x in v.items()}
        return v

    def _target(self, message: dict):
        target = message["target"]
        if isinstance(target, protocol.Handle):
            obj = self._local(target)
            return getattr(obj, message["method"]) if message.get("method") else obj
        return resolve(PACKAGE, target)

    def _call(self, message: dict):
        fn = self._target(message)
        args, kwargs = self._local(message.get("args", [])), self._local(message.get("kwargs", {}))
        if message.get("seed") is not None:
            state.seed(message["seed"])
        with torch.set_grad_enabled(bool(message.get("grad"))):
            return fn(*args, **kwargs)

    def _getattr(self, message: dict):
        return getattr(self._local(message["target"]), str(message["name"]))

    def _module(self, message: dict) -> nn.Module:
        module = self._local(message["target"])
        if not isinstance(module, nn.Module):
            raise Unsupported("the parameters of an object that is not a module")
        return module

    def _owns(self, module: nn.Module) -> list[tuple[str, "Own"]]:
        return [(path, m) for path, m in module.named_modules() if isinstance(m, Own)]

    def _params(self, message: dict):
        """As the worker's: in named_parameters' order (modules depth first), a part's listing at its place."""
        parameters: list[list] = []
        buffers: list[list] = []
        seen: set[int] = set()  # a tied parameter is listed once, as named_parameters lists it
        for prefix, m in self._walk(self._module(message)):
            if isinstance(m, Own):
                m.sync()
                theirs = self.submission._request({"op": "params", "target": m.remote})
                parameters += [[prefix + entry[0], *entry[1:]] for entry in entries(theirs, "parameters")]
                buffers += [[prefix + entry[0], *entry[1:]] for entry in entries(theirs, "buffers")]
                continue
            for n, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    parameters.append([prefix + n, list(p.shape), _dtype(p), p.requires_grad])
            buffers += [[prefix + n, list(b.shape), _dtype(b), n not in m._non_persistent_buffers_set]
                        for n, b in m._buffers.items() if b is not None]
        return {"parameters": parameters, "buffers": buffers}

    def _state(self, message: dict):
        """As state_dict's, in its order (a module's parameters, its persistent buffers, then its children's)."""
        found: dict[str, torch.Tensor] = {}
        for prefix, m in self._walk(self._module(message)):
            if isinstance(m, Own):
                m.sync()
                theirs = self.submission._request({"op": "state", "target": m.remote})
                if not (isinstance(theirs, dict) and all(isinstance(k, str) for k in theirs)):
                    raise Unsupported("the part's state is not a mapping of names")
                found.update({prefix + k: v for k, v in theirs.items()})
                continue
            found.update({prefix + n: p.detach() for n, p in m._parameters.items() if p is not None})
            found.update({prefix + n: b.detach() for n, b in m._buffers.items()
                          if b is not None and n not in m._non_persistent_buffers_set})
        return found

    @staticmethod
    def _walk(module: nn.Module) -> list[tuple[str, nn.Module]]:
        """The modules of `module` with their prefixes, depth first; of a part of the worker's, only the
        part (its mirrored parameters are listed as the worker lists them)."""
        walked: list[tuple[str, nn.Module]] = []
        owns: list[str] = []
        for path, m in module.named_modules():
            if not any(path.startswith(own + ".") for own in owns):
                walked.append((f"{path}." if path else "", m))
                owns += [path] if isinstance(m, Own) else []
        return walked

    def _load_state(self, message: dict):
        """As the worker's: the names it lacks and those of the wrong shape, in the order they were sent."""
        module = self._module(message)
        owns = self._owns(module)
        mine: dict[str, torch.Tensor] = {**dict(module.named_parameters()), **dict(module.named_buffers())}
        found: dict[str, list | None] = {}  # name -> None (missing) or its wrong-shape entry
        theirs: dict[str, dict[str, torch.Tensor]] = {path: {} for path, _ in owns}
        with torch.no_grad():
            for name, value in message["tensors"].items():
                path = next((p for p, _ in owns if name.startswith(p + ".")), None)
                if path is not None:
                    theirs[path][name.removeprefix(path + ".")] = value
                elif name not in mine:
                    found[name] = None
                elif tuple(mine[name].shape) != tuple(value.shape):
                    found[name] = [name, list(value.shape), list(mine[name].shape)]
                else:
                    mine[name].copy_(value)
        for path, own in owns:
            if theirs[path]:
                own.sync()
                answer = self.submission._request({"op": "load", "target": own.remote, "tensors": theirs[path]})
                missing = entries(answer, "missing", str)
                wrong = entries(answer, "wrong_shape")
                found.update({f"{path}.{entry}": None for entry in missing})
                found.update({f"{path}.{n}": [f"{path}.{n}", *rest] for n, *rest in wrong})
                own.took({n: v for n, v in theirs[path].items() if n not in missing and n not in {w[0] for w in wrong}})
        order = [name for name in message["tensors"] if name in found]
        return {"missing": [n for n in order if found[n] is None],
                "wrong_shape": [found[n] for n in order if found[n] is not None]}

    def _backward(self, message: dict):
        fn = self._target(message)
        args = list(self._local(message.get("args", [])))
        wrt = message.get("wrt", [])
        for i in wrt:
            args[i] = args[i].detach().clone().requires_grad_(True)
        module = fn if isinstance(fn, nn.Module) else getattr(fn, "__self__", None)
        if isinstance(module, nn.Module):
            module.zero_grad(set_to_none=True)
        with torch.enable_grad():
            out = fn(*args, **self._local(message.get("kwargs", {})))
            if not isinstance(out, torch.Tensor) or not out.requires_grad:
                return {"output": out, "input_grads": None, "param_grads": None}
            (out * message["grad_output"]).sum().backward()
        params = None
        if isinstance(module, nn.Module):  # the submission's parts' among them, on their mirrors (Through)
            params = {n: p.grad for n, p in module.named_parameters()}
        return {"output": out, "input_grads": [args[i].grad for i in wrt], "param_grads": params}

    def _export(self, v):
        """What the worker would have sent: tensors as plain copies, the submission's parts as their
        handles, other objects as local handles."""
        if isinstance(v, torch.Tensor):
            return v.detach().clone()
        if isinstance(v, (Own, Theirs)):
            return v.remote
        if v is None or type(v) in (bool, int, float, str):
            return v
        if type(v) in (list, tuple):
            return type(v)(self._export(x) for x in v)
        if type(v) is dict:
            return {k: self._export(x) for k, x in v.items()}
        if isinstance(v, (torch.dtype, torch.device, torch.Size)):
            return v
        if id(v) not in self.ours:
            self.ours[id(v)] = LOCAL - len(self.objects)
            self.objects[self.ours[id(v)]] = v
        return protocol.Handle(self.ours[id(v)], type(v).__name__)
