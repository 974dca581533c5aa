"""Numerical forensics: what a wrong tensor looks like next to the expected one.

Run only on a failed comparison (grader.suite.checks.assert_close), over the values the check
graded. Each rule asks for a tight fit on every graded value, so a phrase is said only where the
got tensor really is a simple function of the expected one: the expected times a constant named by a
size n of the tensor (sqrt(n), 1/n, sqrt((n-1)/n), ...), a sign flip, a transpose of two axes, a shift by
one position, a permutation along an axis, rows that sum to one over the wrong axis (or not at
all), NaN only on whole rows, or wrong only where the expected is 0 (the blocked positions of a
mask). None fits: "" (a wrong "looks like" is worse than none).
"""

from __future__ import annotations

import math

import torch

_EVIDENCE = 4  # distinct expected values a float rule needs before it says anything
_TIGHT = 1e-4  # of the expected's scale: float32 arithmetic written another way stays well inside


def _close(a: torch.Tensor, b: torch.Tensor, scale: float) -> bool:
    return a.shape == b.shape and bool(torch.isfinite(a).all()) and bool(((a - b).abs() <= _TIGHT * scale).all())


def _constant(c: float, shape: tuple[int, ...]) -> str:
    """c named as a simple function of a size of the tensor, else "" (a bare number names nothing)."""
    sizes = sorted({n for n in shape if n > 1})
    # a size of the tensor first (d_model, T...), then any small size (a d_k the tensor does not show);
    # the n/(n-1) family (a variance's correction) only for the tensor's sizes: its values lie close together
    for n, near in [(n, True) for n in sizes] + [(n, False) for n in range(2, 65) if n not in sizes]:
        for value, name in ((math.sqrt(n), f"sqrt({n})"), (1 / math.sqrt(n), f"1/sqrt({n})"), (n, f"{n}"),
                            (1 / n, f"1/{n}"), *([] if not near else [
                                (n / (n - 1), f"{n}/{n - 1}"), ((n - 1) / n, f"{n - 1}/{n}"),
                                (math.sqrt(n / (n - 1)), f"sqrt({n}/{n - 1})"),
                                (math.sqrt((n - 1) / n), f"sqrt({n - 1}/{n})")])):
            if abs(c - value) <= 1e-4 * abs(value):
                return name
    return ""


def _scaled(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    denom = float((e * e).sum())
    if denom == 0:
        return ""
    c = float((g * e).sum()) / denom
    if abs(c - 1) < 1e-3 or not math.isfinite(c) or not _close(g, c * e, scale):
        return ""
    if abs(c + 1) < 1e-4:
        return "the expected values with their sign flipped"
    named = _constant(c, tuple(e.shape))
    # an unnamed factor (or 0) is a coincidence of this example more often than the bug's story
    return f"the expected values times {named}" if named else ""


def _moved(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    dims = e.dim()
    for i in range(dims):
        for j in range(i + 1, dims):
            if e.shape[i] == e.shape[j] > 1 and _close(g, e.transpose(i, j), scale):
                return f"the expected values transposed (axes {i - dims} and {j - dims} swapped)"
    for axis in range(dims):
        n = e.shape[axis]
        if n < 3:
            continue
        for step, way in ((1, "later"), (-1, "earlier")):
            # got[i] == expected[i - step] wherever both exist: every value moved one position
            a = g.narrow(axis, max(step, 0), n - 1)
            b = e.narrow(axis, max(-step, 0), n - 1)
            if _close(a, b, scale) and not _close(g, e, scale):
                return f"the expected values shifted one position {way} along axis {axis - dims}"
        # a permutation along the axis: each slice of got is some other slice of expected
        perm = []
        for i in range(n):
            gi = g.select(axis, i)
            match = [j for j in range(n) if _close(gi, e.select(axis, j), scale)]
            if len(match) != 1:
                break
            perm.append(match[0])
        else:
            if sorted(perm) == list(range(n)) and perm != list(range(n)):
                return f"the expected values permuted along axis {axis - dims} (order {perm})"
    return ""


def _sums(g: torch.Tensor, e: torch.Tensor) -> str:
    if e.dim() < 1 or e.shape[-1] < 2 or not bool(torch.isfinite(g).all()):
        return ""
    ones = torch.ones((), dtype=e.dtype)
    if not torch.allclose(e.sum(-1), ones.expand(e.shape[:-1]), atol=1e-5) or bool((e < 0).any()):
        return ""  # not rows of weights
    if torch.allclose(g.sum(-1), ones.expand(g.shape[:-1]), atol=1e-5) or bool(((e > 0).sum(-1) < 2).any()):
        return ""  # rows that sum to one, or rows with one weight (a fully masked row's, or a one-hot)
    if e.dim() >= 2 and e.shape[-2] > 1 and torch.allclose(g.sum(-2), ones.expand(g.sum(-2).shape), atol=1e-5):
        return "rows that do not sum to one, but columns that do (normalised over axis -2, not the last)"
    return "rows that do not sum to one"


def _nan_rows(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    bad = ~torch.isfinite(g)
    if e.dim() < 1 or not bool(bad.any()):
        return ""
    rows = bad.all(-1)
    if not bool((bad == rows[..., None].expand(bad.shape)).all()):
        return ""  # not whole rows
    keep = ~rows[..., None].expand(bad.shape)
    if bool(rows.all()) or not _close(g[keep], e[keep], scale):
        return ""
    return ("NaN or inf only on whole rows, right elsewhere (rows whose keys are all masked: a -inf fill "
            "makes their softmax 0/0)")


def _only_where_zero(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    zero = e == 0
    if not bool(zero.any()) or bool(zero.all()) or not bool(torch.isfinite(g).all()):
        return ""
    if _close(g[~zero], e[~zero], scale) and not _close(g[zero], e[zero], scale):
        return ("right where the expected value is nonzero and wrong only where it is 0 (the positions a mask "
                "blocks: the mask ignored there, or filled with a value that is not very negative)")
    return ""


def looks_like(got: torch.Tensor, expected: torch.Tensor, graded: torch.Tensor | None = None) -> str:
    """A phrase for how `got` relates to `expected` ("" when no rule fits tightly). `graded`: the
    positions the check compares (others are ignored only where whole tensors are not needed)."""
    if got.shape != expected.shape or expected.numel() < 2:
        return ""
    if expected.dtype == torch.bool and got.dtype == torch.bool:
        return _mask(got, expected)
    if not expected.dtype.is_floating_point:
        return ""
    g, e = got.detach().double().cpu(), expected.detach().double().cpu()
    if not bool(torch.isfinite(e).all()):
        return ""
    scale = max(float(e.abs().max()), 1e-6)
    if graded is not None and not bool(graded.all()):
        # only the graded positions can be trusted: the simple rules over them, flat
        m = graded.detach().cpu().bool().expand(e.shape)
        g, e = g[m], e[m]
    # a named factor shared by two different nonzero values is already a story; the other rules need
    # more: a tiny example (a row of pe at position 0 is 0, 1, 0, 1...) fits too many of them
    scaled = _scaled(g, e, scale) if len(torch.unique(e[e != 0].abs())) >= 2 else ""
    if scaled or len(torch.unique(e)) < _EVIDENCE:
        return scaled
    if graded is not None and not bool(graded.all()):
        return _only_where_zero(g, e, scale)
    return _nan_rows(g, e, scale) or _moved(g, e, scale) or _sums(g, e) or _only_where_zero(g, e, scale)


def _mask(got: torch.Tensor, expected: torch.Tensor) -> str:
    """A boolean mask: inverted, transposed, shifted or permuted (exact: a mask has no rounding)."""
    if bool((got == ~expected).all()):
        return "the expected mask inverted (True where it should be False, and the reverse)"
    g, e = got.double(), expected.double()
    return _moved(g, e, 1.0)


def shape(got: tuple[int, ...], expected: tuple[int, ...]) -> str:
    """A wrong shape that is the expected one with two axes swapped."""
    if len(got) != len(expected) or got == expected:
        return ""
    differ = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    n = len(expected)
    if len(differ) == 2 and got[differ[0]] == expected[differ[1]] and got[differ[1]] == expected[differ[0]]:
        return f"the expected shape with axes {differ[0] - n} and {differ[1] - n} swapped"
    return ""
