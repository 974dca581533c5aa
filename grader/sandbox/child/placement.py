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
from torch.utils.weak import WeakIdKeyDictionary

from grader.sandbox.child.record import student_frames

ACROSS = {"__getitem__", "__setitem__", "index_put", "index_put_", "to", "copy_", "type_as", "expand_as",
          "view_as", "reshape_as", "__get__", "size", "dim", "numel", "untyped_storage", "data_ptr"}


def warm() -> None:
    """Import what PyTorch's meta kernels import on first use (torch._dynamo, which the Python
    kernels' wrappers load, and sympy with it) from the installation's cached bytecode: the worker
    compiles what it imports after start-up into an empty prefix (worker.main), where these would
    take ten seconds and more. About a second from the cache; the worker does it while the grader
    starts, before it sets that prefix."""
    if "torch._dynamo" in sys.modules:
        return
    prefix, sys.pycache_prefix = sys.pycache_prefix, None
    try:
        import torch._dynamo  # noqa: F401
    finally:
        sys.pycache_prefix = prefix


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


def tensors_in(v) -> list[torch.Tensor]:
    """The tensors of a value, in lists, tuples (torch.return_types too) and dicts."""
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):  # torch.return_types too
        return [t for x in v for t in tensors_in(x)]
    if type(v) is dict:
        return [t for x in v.values() for t in tensors_in(x)]
    return []
