"""The weights of the submission's part in the fed run (grader.suite.fed.parts.Own), mirrored in the grader.

The reference's composite may do more with a part than call it: Transformer's constructor initialises
every parameter it has, its parts' included, then zeroes its embeddings' padding rows through
`src_embed.token.embedding.weight`. So the part's parameters, as the worker lists them, are parameters
here too, under the same names: the composite reads, initialises and loads them here, and whatever it
changed goes to the worker (op "load") before the part next runs there; the part's gradients come back
onto them. The worker's part keeps its buffers and everything else: reading those is Unsupported.
"""

import torch
from torch import nn

from grader.suite.fed.forms import Unsupported

# the elements a part's parameters may hold: this many times the reference part's, and a little more (a
# layout of its own, a bias the reference lacks), never what would make the grader hold whatever it sends
MAX_FACTOR, MAX_EXTRA = 4, 4096


class Shadow(nn.Module):
    """The submission's part, or a submodule of it, as far as its parameters go: whatever else the
    reference's composite reads of it (its buffers, attributes) is the worker's."""

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("__"):
                raise
            raise Unsupported(f"the reference's composite reads .{name} of the submission's part") from None


def mirror(own: nn.Module, listing: list, state, twin: nn.Module) -> dict[str, torch.Tensor]:
    """`own`'s parameters, from the worker's listing (names, shapes, whether they want gradients) and
    state (their values), each a parameter of `own` or of a Shadow under it at its name. Returns the
    values as sent: what the worker holds."""
    budget = MAX_FACTOR * sum(p.numel() for p in twin.parameters()) + MAX_EXTRA
    held: dict[str, torch.Tensor] = {}
    for name, shape, _, wants in listing:
        value = state.get(name) if isinstance(state, dict) else None
        if type(value) is not torch.Tensor or list(value.shape) != shape or not value.is_floating_point():
            raise Unsupported(f"the submission's part's state has no parameter {name!r} of its listing's form")
        budget -= value.numel()
        if budget < 0:
            raise Unsupported("the submission's part holds far more weights than the reference's part")
        *path, leaf = name.split(".")
        module = own
        for step in path:
            child = module._modules.get(step)
            if child is None:
                _free(module, step)
                child = module._modules[step] = Shadow()
            module = child
        _free(module, leaf)
        module._parameters[leaf] = nn.Parameter(value.detach().clone(), requires_grad=wants is True)
        held[name] = value.detach().clone()
    return held


def _free(module: nn.Module, name: str) -> None:
    """`name` names nothing of `module` yet and could be an attribute's name (not the kit's own)."""
    if not (name.isidentifier() or name.isdigit()) or name.startswith("_") or hasattr(type(module), name) \
            or name in vars(module) or name in module._parameters or name in module._buffers \
            or name in module._modules or name in ("remote", "twin", "held", "built", "training"):
        raise Unsupported(f"the submission's part names a parameter {name!r} that cannot be mirrored")


def changed(own: nn.Module, held: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The mirrored parameters whose values differ from what the worker holds (`held`), which is then
    taken to hold them."""
    found = {}
    for name, was in held.items():
        now = own.get_parameter(name).detach()
        if now.shape != was.shape or now.dtype != was.dtype or not torch.equal(now, was):
            found[name] = held[name] = now.clone()
    return found
