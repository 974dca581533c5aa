"""What the grader tells a stand-in of a reference part (grader.suite.parts.serve): the reference module's
tree as data (class names, constructor arguments of torch's built-ins, plain attributes, tensors;
never code), and the methods of a plain class that its stand-in forwards to the grader."""

from collections.abc import Callable
from typing import Any

from torch import nn

from grader.sandbox.child.standins.standin import TORCH
from grader.sandbox.child.standins.values import plain

# constructor arguments of the torch.nn built-ins that the stand-ins rebuild as themselves
TORCH_ARGS: dict[type[nn.Module], Callable[[Any], dict]] = {
    nn.Linear: lambda m: {"in_features": m.in_features, "out_features": m.out_features, "bias": m.bias is not None},
    nn.Dropout: lambda m: {"p": m.p, "inplace": m.inplace},
    nn.Embedding: lambda m: {"num_embeddings": m.num_embeddings, "embedding_dim": m.embedding_dim,
                             "padding_idx": m.padding_idx, "max_norm": m.max_norm, "norm_type": m.norm_type,
                             "scale_grad_by_freq": m.scale_grad_by_freq, "sparse": m.sparse},
    nn.LayerNorm: lambda m: {"normalized_shape": tuple(m.normalized_shape), "eps": m.eps,
                             "elementwise_affine": m.elementwise_affine, "bias": m.bias is not None},
    nn.ReLU: lambda m: {"inplace": m.inplace},
    nn.GELU: lambda m: {"approximate": m.approximate},
    **{c: lambda m: {} for c in (nn.ModuleList, nn.Sequential, nn.Identity, nn.Tanh, nn.Sigmoid)},
}
assert {c.__name__ for c in TORCH_ARGS} == set(TORCH), "the worker rebuilds the same classes"
# what a plain class's stand-in forwards here besides its public methods
DUNDERS = ("__len__", "__getitem__", "__contains__")


def methods(cls: type) -> list[str]:
    """The methods of a plain class (not a module) that its stand-in forwards to the grader."""
    return sorted({name for c in cls.__mro__ if c is not object for name, v in vars(c).items()
                   if callable(v) and (not name.startswith("_") or name in DUNDERS)})


def describe(m: nn.Module, prefix: str) -> dict:
    """`m`'s tree; `prefix`: the reference package's name and a dot (a part's own classes are named
    by their place in it)."""
    kind = type(m)
    rebuilt = kind in TORCH_ARGS
    return {
        "class": kind.__name__,
        "part": f"{kind.__module__[len(prefix):]}:{kind.__qualname__}" if kind.__module__.startswith(prefix)
        else None,
        "torch": rebuilt,
        "kwargs": TORCH_ARGS[kind](m) if rebuilt else {},
        "attrs": {} if rebuilt else {k: v for k, v in vars(m).items()
                                     if not k.startswith("_") and k != "training" and plain(v)},
        "parameters": {k: v.detach() for k, v in m._parameters.items() if v is not None},
        "buffers": {k: v for k, v in m._buffers.items() if v is not None},
        "persistent": [k for k in m._buffers if k not in m._non_persistent_buffers_set],
        "modules": [[k, describe(c, prefix)] for k, c in m._modules.items() if c is not None],
    }
