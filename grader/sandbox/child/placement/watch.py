"""Worker side of the device-placement checks: CPU tensors that meet tensors on another device.

Code that is right on the CPU can break on a GPU: a mask built with torch.ones(T, T) inside
forward, a table kept as a plain attribute that .to(device) does not move, a hard-coded
.cuda(). The checks move a module and its inputs to another device (`meta` on every machine:
shapes and dtypes, no data; `cuda` in the GPU tier) and run it under `Placement`, which sees
every torch call. A CPU tensor that meets a tensor on that device stops the run, as it would on
a GPU, and the report names the submission's line that made the CPU tensor and the line where
the two met. torch's own meta kernels are not enough: some (matmul) accept CPU operands.

What CUDA accepts is accepted here too: 0-dim CPU tensors beside device ones (x * torch.tensor(2.)),
indexing with CPU indices, copies and moves across devices, and the "_as" methods that only read
the other tensor's shape or type.
"""

import sys

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map
from torch.utils.weak import WeakIdKeyDictionary

from grader.sandbox.child.fixtures import KIT
from grader.sandbox.child.placement import held
from grader.sandbox.child.record import student_frames

ACROSS = {"__getitem__", "__setitem__", "index_put", "index_put_", "to", "copy_", "type_as", "expand_as",
          "view_as", "reshape_as", "__get__", "size", "dim", "numel", "untyped_storage", "data_ptr"}


def warm() -> None:
    """Import what PyTorch's meta kernels import on first use (torch._dynamo, which the Python
    kernels' wrappers load, and sympy with it) from the installation's cached bytecode: the worker
    compiles what it imports after start-up into an empty prefix (worker.main), where these would
    take ten seconds and more. About a second from the cache; the worker does it while the grader
    starts, before it sets that prefix. And what the first `record_function` imports, as the
    template does (zygote.record_function_once)."""
    if "torch._dynamo" in sys.modules:
        return
    prefix, sys.pycache_prefix = sys.pycache_prefix, None
    try:
        import torch._dynamo  # noqa: F401

        with torch.autograd.profiler.record_function("worker"):
            pass
    finally:
        sys.pycache_prefix = prefix


# what torch says when meta code asks for a host copy (.cpu(), .tolist(), .to("cpu"); .numpy(), np.asarray):
# not run again with values, where it would run; the check names it (tests/grading/helpers/device.py)
HOST_COPY = ("Cannot copy out of meta tensor", "can't convert meta device type tensor to numpy")


class Stray(BaseException):
    """A CPU tensor met one on the device: raised into the submission's code to stop it, as a GPU
    would. A BaseException, so that `except Exception` in the submission does not swallow it
    (and if it is swallowed anyway, `Placement.found` keeps the report)."""


class Placement(TorchFunctionMode):
    """Active while a module runs on `device`; `found` is the first CPU tensor that met it:
    {"function", "created": [frames], "attribute", "met": [frames]}. `root` is the module run, whose
    plain tensor attributes (which .to() does not move) are named when one of them is the stray."""

    def __init__(self, device: str, root: torch.nn.Module | None = None):
        super().__init__()
        self.device, self.root = device, root
        self.origins = WeakIdKeyDictionary()  # CPU tensor made during the run -> the frames that made it
        self.found: dict | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        inputs = tensors_in((args, kwargs))
        if self.found is None and name not in ACROSS and any(t.device.type == self.device for t in inputs):
            stray = next((t for t in inputs if t.device.type == "cpu" and t.dim() > 0), None)
            if stray is not None:
                self.found = {"function": name, "created": self.origins.get(stray, []),
                              "attribute": self._attribute(stray), "met": student_frames(sys._getframe(1))}
                raise Stray(name)
        out = func(*args, **kwargs)
        made = [t for t in tensors_in(out) if t.device.type == "cpu"]
        if made:
            # a CPU tensor from nothing (a factory call) starts a trail; one made from such a tensor follows it
            origin = next((self.origins[t] for t in inputs if t in self.origins), None)
            if origin is None and not any(t.device.type == "cpu" for t in inputs):
                origin = student_frames(sys._getframe(1))
            for t in made if origin else ():
                self.origins[t] = origin
        return out

    def _attribute(self, stray: torch.Tensor) -> str:
        """The plain tensor attribute of the module that `stray` views, if any ("position.pe")."""
        if self.root is None:
            return ""
        storage = stray.untyped_storage().data_ptr()
        for path, module in self.root.named_modules():
            for key, value in vars(module).items():
                if (isinstance(value, torch.Tensor) and value.device.type == "cpu"
                        and value.untyped_storage().data_ptr() == storage):
                    return f"{path}.{key}" if path else key
        return ""


# A second device for the placement checks on the CPU: a submission could make its tensors on the
# CPU everywhere but where it sees `meta`. Fake tensors (meta storage) that say they are on SECOND
# hide `meta` from x.device and x.is_meta.
SECOND = held.SECOND


def on_a_second_device(run, module: torch.nn.Module | None, args: list, kwargs: dict) -> dict | None:
    """Run `run(args, kwargs)` again, forward only, with what the meta run moved to `meta` (the module's
    parameters and buffers, and the tensors and modules among the arguments) as fake tensors on SECOND,
    under Placement: the stray it finds (Placement.found), or None. Only a stray is judged here:
    whatever else fails on fake tensors (code that reads a value) judges nothing. The module's own
    tensors are put back as they were."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    saved: list[tuple[dict, str, object]] = []  # (a module's _parameters or _buffers, key, what was there)

    def fake(t):
        return FakeTensor(mode, t.detach(), SECOND) if isinstance(t, torch.Tensor) and t.is_meta else t

    def move(m: torch.nn.Module):
        for sub in m.modules():
            for table in (sub._parameters, sub._buffers):
                for key, t in list(table.items()):
                    if isinstance(t, torch.Tensor) and t.is_meta:
                        saved.append((table, key, t))
                        f = fake(t)
                        table[key] = torch.nn.Parameter(f, t.requires_grad) if isinstance(t, torch.nn.Parameter) else f

    def convert(v):
        if isinstance(v, torch.nn.Module):
            move(v)
            return v
        if isinstance(v, torch.Tensor):
            return fake(v)
        if type(v) in (list, tuple):
            return type(v)(convert(x) for x in v)
        if type(v) is dict:
            return {k: convert(x) for k, x in v.items()}
        return v

    placed = Placement(SECOND.type, module)
    try:
        if module is not None:
            move(module)
        fake_args, fake_kwargs = convert(list(args)), convert(dict(kwargs))
        with torch.no_grad(), mode, placed:
            run(fake_args, fake_kwargs)
    except (Exception, Stray):
        pass
    finally:
        for table, key, t in reversed(saved):
            table[key] = t
    return placed.found


def keep(modules: list[torch.nn.Module]) -> list[tuple[dict, str, torch.Tensor]]:
    """(a module's _parameters or _buffers, key, a CPU copy of the tensor there) for each of `modules`
    and their submodules, taken before the meta run moves them (with_values holds these values)."""
    return [(table, key, t.detach().clone()) for m in modules for sub in m.modules()
            for table in (sub._parameters, sub._buffers) for key, t in list(table.items())
            if isinstance(t, torch.Tensor)]


def with_values(run, module: torch.nn.Module | None, kept: list[tuple[dict, str, torch.Tensor]], args: list,
                kwargs: dict) -> tuple[dict | None, object]:
    """Run `run(args, kwargs)` again, forward only, on held.SECOND with values (after the meta run
    raised: code that reads a value runs there as on a GPU): the kept tensors of the modules held there,
    and the arguments' tensors; under Placement. (the stray found, None) or (None, the output); what
    else the run raises is raised (an error off the CPU, where the CPU ran the same call). The modules'
    own tensors are put back as they were."""
    swapped = [(table, key, table[key]) for table, key, _ in kept]
    for table, key, t in kept:
        now = table[key]
        table[key] = torch.nn.Parameter(held.hold(t), now.requires_grad) if isinstance(
            now, torch.nn.Parameter) else held.hold(t)
    placed = Placement(held.SECOND.type, module)
    try:
        args, kwargs = tree_map(held.hold, (args, kwargs))
        with torch.no_grad(), held.Values(), placed:
            out = run(args, kwargs)
    except Stray:
        return placed.found, None
    except Exception:
        if placed.found is not None:  # reported even when the submission caught the Stray and raised another
            return placed.found, None
        raise
    finally:
        for table, key, t in reversed(swapped):
            table[key] = t
    if placed.found is not None:
        return placed.found, None
    return None, tree_map(held.as_meta, out)


def probe(x: torch.Tensor) -> torch.Tensor:
    """The grader's test of this watch (grader.suite.placement): a CPU tensor made here meets `x`, on the
    device, which a watch left as it is reports as a stray."""
    return x * torch.ones(x.shape[-1])


KIT["placement_probe"] = probe


def tensors_in(v) -> list[torch.Tensor]:
    """The tensors of a value, in lists, tuples (torch.return_types too) and dicts."""
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):  # torch.return_types too
        return [t for x in v for t in tensors_in(x)]
    if type(v) is dict:
        return [t for x in v.values() for t in tensors_in(x)]
    return []
