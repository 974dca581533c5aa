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

from grader.suite.forensics_form import dtype, shape  # noqa: F401  (the checks read them here)

_EVIDENCE = 4  # distinct expected values a float rule needs before it says anything
_TIGHT = 1e-4  # of the expected's scale: float32 arithmetic written another way stays well inside


def _close(a: torch.Tensor, b: torch.Tensor, scale: float) -> bool:
    return a.shape == b.shape and bool(torch.isfinite(a).all()) and bool(((a - b).abs() <= _TIGHT * scale).all())


def _constant(c: float, dims: tuple[int, ...]) -> str:
    """c named as a simple function of a size of the tensor, else "" (a bare number names nothing)."""
    sizes = sorted({n for n in dims if n > 1})
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


def _row_shift(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    """got = expected + a constant per row (the last axis), the constants not all one: log_softmax's
    output where logits are expected, or scores shifted by a per-row amount."""
    if e.dim() < 2 or e.shape[-1] < 3 or e.numel() // e.shape[-1] < 2 or not bool(torch.isfinite(g).all()):
        return ""
    d = g - e
    shift = d.mean(-1, keepdim=True)
    if not _close(d, shift.expand(d.shape), scale) or float((shift.max() - shift.min()).abs()) <= _TIGHT * scale:
        return ""  # not a per-row shift, or one constant for all (no story: a bias)
    if torch.allclose(torch.logsumexp(g, -1), torch.zeros((), dtype=g.dtype), atol=1e-4):
        return ("the expected values minus a constant per row, whose exponentials sum to one: log_softmax of the "
                "expected (log-probabilities where logits are expected)")
    return "the expected values plus a different constant in each row (along the last axis)"


def _row_scale(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    """got = expected times a factor per row (the last axis), the factors not all one: each vector
    normalised by another amount (LayerNorm's variance or eps taken otherwise)."""
    if e.dim() < 2 or e.shape[-1] < 3 or e.numel() // e.shape[-1] < 2 or not bool(torch.isfinite(g).all()):
        return ""
    ge, ee = g.reshape(-1, e.shape[-1]), e.reshape(-1, e.shape[-1])
    denom = (ee * ee).sum(-1, keepdim=True)
    if bool((denom <= (1e-3 * scale) ** 2).any()) or bool(((ee != 0).sum(-1) < 2).any()):
        return ""  # a row of zeros scales to anything
    c = (ge * ee).sum(-1, keepdim=True) / denom
    if not _close(ge, c * ee, scale) or float(c.max() - c.min()) <= 1e-3 * max(float(c.abs().max()), 1e-6):
        return ""  # not a factor per row, or one factor for all (_scaled's case)
    return ("the expected values times a different factor in each row (along the last axis): each vector "
            "normalised by another amount (its variance, eps or norm taken otherwise)")


def _per_batch(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    """got - expected the same for every element of the batch (axis 0) and not 0: a term that depends on
    position and feature only (a table such as the positional encoding) added, scaled or left out."""
    if e.dim() < 3 or e.shape[0] < 2 or not bool(torch.isfinite(g).all()):
        return ""
    d = g - e
    if float(d.abs().max()) <= 100 * _TIGHT * scale or not _close(d, d[:1].expand(d.shape), scale):
        return ""
    if _close(d, d.flatten()[0].expand(d.shape), scale):
        return ""  # one constant everywhere: no story
    row = d.reshape(-1, d.shape[-1])
    if _close(row, row[:1].expand(row.shape), scale):  # the same for every position too: a bias
        return ("the expected values plus a constant per feature (last axis), the same at every position: a bias "
                "(or beta) added, left out, or the wrong one")
    return ("the expected values plus a term that is the same for every element of the batch (it depends on "
            "position and feature only, like the positional table: added twice, scaled, or left out)")


def _per_feature(g: torch.Tensor, e: torch.Tensor, scale: float) -> str:
    """got[..., j] = a_j * expected[..., j] + b_j, the (a_j, b_j) not all (1, 0) nor one factor: each
    feature scaled and shifted by its own constants (LayerNorm's gamma and beta applied otherwise)."""
    if e.dim() < 2 or e.shape[-1] < 2 or not bool(torch.isfinite(g).all()):
        return ""
    n = e.shape[-1]
    ge, ee = g.reshape(-1, n), e.reshape(-1, n)
    if ee.shape[0] < 6:
        return ""  # two constants per feature: too few rows to tell a fit from a coincidence
    em, gm = ee.mean(0), ge.mean(0)
    var = ((ee - em) ** 2).sum(0)
    if bool((var <= (1e-3 * scale) ** 2 * ee.shape[0]).any()):
        return ""
    a = ((ee - em) * (ge - gm)).sum(0) / var
    b = gm - a * em
    if not _close(ge, a * ee + b, scale):
        return ""
    uniform = float(a.max() - a.min()) <= 1e-3 * max(float(a.abs().max()), 1.0)
    if uniform and float(b.max() - b.min()) <= _TIGHT * scale:
        return ""  # one scale and one shift for every feature (0 included): no per-feature story
    if uniform and abs(float(a.mean()) - 1) < 1e-3:
        return ("the expected values plus a constant per feature (last axis), the same at every position: a bias "
                "(or beta) added, left out, or the wrong one")
    if uniform:  # one factor about each feature's own centre: the normalised part scaled, the shift kept
        c = float(a.mean())
        named = _constant(c, tuple(e.shape))
        return (f"the expected values times {named} about each feature's own centre (the normalised part scaled "
                f"by {named}, the shift kept: a variance or standard deviation off by that factor)") if named else ""
    return ("the expected values with each feature (last axis) scaled and shifted by its own constants: a "
            "per-feature scale and shift (gamma and beta) applied in another way, or not at all")


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
    return (_nan_rows(g, e, scale) or _moved(g, e, scale) or _sums(g, e) or _only_where_zero(g, e, scale)
            or _row_shift(g, e, scale) or _row_scale(g, e, scale) or _per_batch(g, e, scale)
            or _per_feature(g, e, scale))


def _mask(got: torch.Tensor, expected: torch.Tensor) -> str:
    """A boolean mask: inverted, transposed, shifted or permuted (exact: a mask has no rounding)."""
    if bool((got == ~expected).all()):
        return "the expected mask inverted (True where it should be False, and the reverse)"
    g, e = got.double(), expected.double()
    future = _future(got, expected)
    n = got.shape[-1] if got.dim() >= 2 else 0
    # a mask one diagonal too wide is an off-by-one (a shift says it best); wider, the causal part is missing
    band = torch.ones(n, n, dtype=torch.bool).triu(1) & ~torch.ones(n, n, dtype=torch.bool).triu(2)  # j == i + 1
    if future and not bool((got & ~expected & ~band).any()):
        return _moved(g, e, 1.0) or future
    return future or _moved(g, e, 1.0)


def _future(got: torch.Tensor, expected: torch.Tensor) -> str:
    """A square mask that lets through everything the expected does, and more, only above the diagonal."""
    if got.dim() < 2 or got.shape[-1] != got.shape[-2] or got.shape[-1] < 2:
        return ""
    extra = got & ~expected
    if not bool(extra.any()) or bool((~got & expected).any()):
        return ""
    n = got.shape[-1]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    if bool((extra & ~future).any()):
        return ""
    return "the expected mask with the future (key j > query i) let through: the causal part missing"
