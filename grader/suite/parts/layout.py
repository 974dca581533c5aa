"""What the grader needs of a reference module at each call of its stand-in, worked out once per module.

A stand-in's call runs the reference module on the stand-in's weights (grader.suite.parts.serve): the
names, shapes and submodules it checks them against are the module's own, which never change
once built (the reference's code is trusted, and its forward runs on weights handed to it).
Walking the module tree for them at every call was most of a call's cost for an Encoder or a
Transformer, thousands of times per grading.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Layout:
    modules: dict[str, nn.Module]  # path -> submodule ("" the module itself)
    weights: dict[str, tuple[torch.Size, bool]]  # parameter or buffer name -> (shape, floating point)
    # where each weight is held: (the table of its module that holds it, its key there, the name whose
    # weight it is: a tied weight is held at two places under one name)
    slots: list[tuple[dict, str, str]]
    # (path, a submodule's __dict__, its public names, how many entries it had when they were listed)
    attrs: list[tuple[str, dict, list[str], int]]

    @classmethod
    def of(cls, module: nn.Module) -> "Layout":
        own = {**dict(module.named_parameters()), **dict(module.named_buffers())}
        first = {id(v): k for k, v in own.items()}
        slots = [(getattr(m, table), key, first[id(v)]) for m in module.modules()
                 for table in ("_parameters", "_buffers") for key, v in getattr(m, table).items() if v is not None]
        modules = dict(module.named_modules())
        attrs = [(path, m.__dict__, [k for k in m.__dict__ if k[:1] != "_"], len(m.__dict__))
                 for path, m in modules.items()]
        return cls(modules, {k: (v.shape, v.is_floating_point()) for k, v in own.items()}, slots, attrs)


@contextmanager
def on_weights(layout: Layout, weights: dict[str, torch.Tensor]) -> Iterator[None]:
    """The module runs on `weights` (every name of its layout) until the block ends, as under
    torch.func.functional_call, without walking its tree for them at each call."""
    slots = layout.slots
    kept = [table[key] for table, key, _ in slots]
    try:
        for table, key, name in slots:
            table[key] = weights[name]
        yield
    finally:
        for (table, key, _), old in zip(slots, kept, strict=True):
            table[key] = old


def tensor_attrs(layout: Layout | None) -> dict:
    """(path, name) -> each public tensor attribute of the module's tree."""
    found: dict = {}
    for path, attrs, public, size in layout.attrs if layout is not None else ():
        if len(attrs) != size:  # an attribute set since the layout was taken
            public = [k for k in attrs if k[:1] != "_"]
        for k in public:
            v = attrs.get(k)
            if isinstance(v, torch.Tensor):
                found[(path, k)] = v
    return found


def changed(layout: Layout | None, before: dict) -> dict:
    """Tensor attributes the reference set during the call, by module path."""
    out: dict[str, dict] = {}
    for (path, k), v in tensor_attrs(layout).items():
        if before.get((path, k)) is not v:
            out.setdefault(path, {})[k] = v.detach()
    return out
