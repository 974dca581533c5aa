"""A check's example as data as well as text: what `describe` printed, and the values it printed
(and any the check adds without printing them, such as the seed its weights were drawn from),
encoded for JSON, so that `grade --repro` rebuilds the example from the report's fields, never
from its words."""

import math

import torch

# past this many elements a tensor is recorded by dtype and shape only (data None): the JSON report stays
# small (a drawn example is a few hundred elements; checks on larger fixed inputs have no recipe)
MAX_NUMEL = 1024


class Example(str):
    """describe()'s text; `values`: its entries as data (`encode`), in the report's "inputs"."""

    values: dict

    def __new__(cls, text: str, values: dict):
        made = super().__new__(cls, text)
        made.values = values
        return made

    def __getnewargs__(self):  # copy and pickle rebuild it through __new__, which needs both
        return str(self), self.values


def carrying(example: str, **extra) -> Example:
    """`example` with `extra` added to its data but not to its text: what the check used to build
    its example that the example does not show (a seed, a size). The keywords are data, named as the
    example names them, not options."""
    return Example(str(example), {**getattr(example, "values", {}), **{k: encode(v) for k, v in extra.items()}})


def encode(value) -> dict:
    """A tensor -> {"dtype", "shape", "data": its elements in row-major order (NaN and infinities as
    the strings "nan", "inf", "-inf"), or None past MAX_NUMEL}; a plain value -> {"value": it};
    anything else -> {"text": its repr}."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        data = None if t.numel() > MAX_NUMEL else [_number(x) for x in t.reshape(-1).tolist()]
        return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "data": data}
    if _plain(value):
        return {"value": _number(value) if isinstance(value, float) else value}
    return {"text": repr(value)[:300]}


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) and not (isinstance(v, float) and not math.isfinite(v)) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _number(x):
    return x if not isinstance(x, float) or math.isfinite(x) else str(x)
