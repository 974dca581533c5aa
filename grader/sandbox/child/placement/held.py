"""A second device that holds values, for the device-placement checks (issue 51).

On `meta` a forward that reads a value (.item(), `if mask.any()`, a data-dependent shape) cannot
run, so a device bug behind such a read was never seen: code could even read a value on purpose
off the CPU to be judged on nothing. Here each tensor says it is on `SECOND` and holds its values
in a CPU tensor, every operator runs on those values, and a factory call asked for `SECOND`
makes its tensor there: whatever runs on a GPU runs here, so an error here is code that does not
run off the CPU. A CPU tensor that meets these is seen by watch.Placement, as on `meta`.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

# Not `cuda:0`: PyTorch's composite kernels take a device guard for a tensor's device, and a CPU build
# aborts the process for cuda ("not linked with support for cuda devices"), as for every device type
# but cpu, meta and lazy (torch 2.13). Not `meta` either: code that tests for meta does not see it here.
SECOND = torch.device("lazy", 0)


class Held(torch.Tensor):
    """A tensor on SECOND whose values are `on_cpu`, a CPU tensor of the same shape and dtype."""

    on_cpu: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(
            cls, inner.size(), strides=inner.stride(), storage_offset=inner.storage_offset(), dtype=inner.dtype,
            layout=inner.layout, device=SECOND, requires_grad=inner.requires_grad)

    def __init__(self, inner: torch.Tensor):
        self.on_cpu = inner

    # the watch (watch.Placement, a function mode) sees torch's functions; these see the operators
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]
        return _run(func, args, kwargs or {})


def _on_second(device) -> bool:
    return isinstance(device, torch.device) and device.type == SECOND.type


def _run(func, args, kwargs):
    """`func` on the values: Held arguments unwrapped, a request for SECOND made on the CPU, and the
    outputs held again unless the call moved them off SECOND (.cpu(), .to("cpu")). An output that is
    an argument's own values (an in-place or out= operator) comes back as that argument."""
    held: dict[int, Held] = {}

    def unwrap(t):
        if isinstance(t, Held):
            held[id(t.on_cpu)] = t
            return t.on_cpu
        return t

    args, kwargs = tree_map(unwrap, (args, kwargs))
    device = kwargs.get("device")
    if _on_second(device):
        kwargs = {**kwargs, "device": torch.device("cpu")}
    out = func(*args, **kwargs)
    if not (held or _on_second(device)) or (device is not None and not _on_second(device)):
        return out
    return tree_map(lambda t: (held[id(t)] if id(t) in held else Held(t)) if isinstance(t, torch.Tensor) else t, out)


class Values(TorchDispatchMode):
    """Active while the run runs: factory calls that ask for SECOND (torch.ones(n, device=x.device)),
    which hold no tensor to dispatch on, land here too."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def hold(t):
    """`t` on SECOND: a plain tensor's copy held, anything else as it is."""
    return Held(t.detach().cpu().clone()) if type(t) is torch.Tensor else t


def as_meta(t):
    """What the placement check reads of an output held on SECOND: its shape and dtype, on `meta` (as
    the meta run would have returned it); anything else as it is (a CPU output stays on the CPU)."""
    return torch.empty(t.shape, dtype=t.dtype, device="meta") if isinstance(t, Held) else t
