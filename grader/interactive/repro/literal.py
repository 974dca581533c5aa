"""Values written as Python source for a repro script, and read back from a report's data."""

import math
import textwrap

import torch


def literal(value) -> str:
    """Python source that rebuilds `value` exactly: tensors element by element (a float's repr reads
    back as the same float, and so as the same float32), tuples, lists, dicts and plain values."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        items = [_number(x) for x in t.reshape(-1).tolist()]
        flat = textwrap.fill(", ".join(items), width=100, initial_indent="    ", subsequent_indent="    ",
                             break_long_words=False, break_on_hyphens=False)
        dtype = str(t.dtype).removeprefix("torch.")
        return f"torch.tensor([\n{flat}\n], dtype=torch.{dtype}).reshape({tuple(t.shape)!r})"
    if isinstance(value, tuple):
        return "(" + "".join(f"{literal(v)}, " for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"\n    {k!r}: {literal(v)}" for k, v in value.items()) + "\n}"
    if isinstance(value, float):
        return _number(value)
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    raise TypeError(f"cannot write a {type(value).__name__} into a script")


def _number(x) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return f'float("{x}")'
    return repr(x)


def decode(inputs: dict, names: tuple[str, ...]) -> dict:
    """The entries `names` of a failed check's "inputs" (grader.suite.example.encode) back into values:
    tensors exactly as the check made them, plain values as they were. An entry missing, or recorded
    without its data (a tensor too large, an object shown by its repr): ValueError naming it."""
    values = {}
    for name in names:
        entry = inputs.get(name)
        if entry is None:
            raise ValueError(f"the example has no {name}")
        if "value" in entry:
            values[name] = entry["value"]
        elif "dtype" in entry and entry.get("data") is not None:
            data = [float(x) if isinstance(x, str) else x for x in entry["data"]]  # "nan", "inf", "-inf"
            values[name] = torch.tensor(data, dtype=getattr(torch, entry["dtype"])).reshape(entry["shape"])
        elif "dtype" in entry:
            raise ValueError(f"{name} is too large for the report to record in full")
        else:
            raise ValueError(f"{name} is recorded only as its text ({entry.get('text', '')[:40]})")
    return values
