"""The plain attributes a stand-in shows are its submission part's, never the reference's (issue 43).

A composite that reads a plain attribute the reference sets and its own part does not (a `d_k` its
MultiHeadAttention calls `head_dim`) would tell the reference's stand-in from its own part, at the
top of a swapped part and at every part nested in it (`self.layers[0].self_attn`).
"""

import inspect

import torch

from grader.sandbox.child.standins.values import plain


def built_in_place(module: torch.nn.Module, cls, args, kwargs) -> dict | None:
    """Run the submission's constructor, `cls.__init__`, on `module` (a stand-in, not yet populated), its
    random draws undone: whatever the submission's code records of the parts it builds (their ids, a
    count, a registry) holds for the stand-in as for its own part (issue 51: a composite told the two
    apart so). Then what it made is taken away, for the reference's tree to take its place; its plain
    attributes are returned, or None where it fails (that is charged in its own component)."""
    try:
        with torch.random.fork_rng(devices=[]):
            cls.__init__(module, *args, **kwargs)
        found = {k: v for k, v in vars(module).items() if not k.startswith("_") and plain(v)}
    except Exception:
        found = None
    vars(module).clear()
    torch.nn.Module.__init__(module)
    return found


def arguments(cls, attrs: dict) -> dict | None:
    """Keyword arguments for the submission's `cls`, read by the contract's parameter names from the
    plain attributes of a reference part built inside another (whose own arguments are not sent);
    None where a required one is not among them."""
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    found = {}
    for p in parameters:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in attrs:
            found[p.name] = attrs[p.name]
        elif p.default is p.empty:
            return None
    return found


def show_own(module, own: dict | None) -> None:
    """Give `module` the plain attributes in `own` that it lacks, and take away those it has that
    `own` lacks (None: left as it is)."""
    if own is None:
        return
    for key, value in own.items():
        if key not in vars(module) and not hasattr(type(module), key):
            setattr(module, key, value)
    for key in [k for k, v in vars(module).items() if not k.startswith("_") and plain(v)
                and k not in own and k != "training"]:
        delattr(module, key)

