"""Forensics of a tensor of the wrong form: a shape that is the expected one with two axes swapped or
size-1 axes left out, a dtype whose values are the expected ones (grader.suite.forensics says what wrong
values look like; the checks read both through it)."""

from __future__ import annotations

import torch


def shape(got: tuple[int, ...], expected: tuple[int, ...]) -> str:
    """A wrong shape that is the expected one with two axes swapped."""
    if got == expected:
        return ""
    if len(got) != len(expected):
        return _singletons(got, expected)
    differ = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    n = len(expected)
    if len(differ) == 2 and got[differ[0]] == expected[differ[1]] and got[differ[1]] == expected[differ[0]]:
        return f"the expected shape with axes {differ[0] - n} and {differ[1] - n} swapped"
    if differ == [0] and got[0] == 1 and n >= 3:
        return (f"the expected shape with size 1 on the batch axis where {expected[0]} is expected: the same "
                f"values for every batch element (the part that depends on the batch left out?)")
    return ""


def _singletons(got: tuple[int, ...], expected: tuple[int, ...]) -> str:
    """got is expected with some size-1 axes left out (or added): the values may be right, the layout not."""
    def squeeze(s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(n for n in s if n != 1)

    if squeeze(got) != squeeze(expected) or not squeeze(expected):
        return ""
    fewer = len(got) < len(expected)
    what = "it does not broadcast as the contract says" if fewer else "extra singleton axes"
    return (f"the expected shape with {'fewer' if fewer else 'more'} size-1 axes ({len(got)} axes where "
            f"{len(expected)} are expected): {what}")


def dtype(got: torch.Tensor, expected: torch.Tensor) -> str:
    """A tensor of the wrong dtype whose values are the expected ones (a 0/1 mask for a boolean one)."""
    if got.shape != expected.shape or got.dtype == expected.dtype or got.numel() == 0:
        return ""
    g = got.detach().cpu()
    if expected.dtype == torch.bool:
        if bool(((g == 0) | (g == 1)).all()) and bool((g.bool() == expected.detach().cpu()).all()):
            return (f"the expected mask as 0/1 values of dtype {str(got.dtype).removeprefix('torch.')}, not "
                    f"torch.bool (build it from comparisons, or call .bool())")
        return ""
    if expected.dtype.is_floating_point and g.dtype.is_floating_point:
        e = expected.detach().cpu().double()
        scale = max(float(e.abs().max()), 1e-6) * 10
        if bool(torch.isfinite(g).all()) and bool(((g.double() - e).abs() <= 1e-4 * scale).all()):
            return f"the expected values in {str(got.dtype).removeprefix('torch.')}"
    return ""
