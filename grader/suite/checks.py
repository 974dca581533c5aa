"""Assertions for grading tests, whose failures tell a student what was expected and what came back."""

from dataclasses import dataclass, replace

import torch

from grader.findings import Frame, Parameters
from grader.pattern import Pattern, found
from grader.results import Details
from grader.sandbox.child.protocol import Handle
from grader.suite.example import Example, encode


@dataclass(frozen=True)
class Found:
    """What a comparison found beside expected and got, passed to Mismatch as one value (`found=`)."""

    max_abs_error: float | None = None
    where: str = ""
    looks_like: str = ""  # what got is, next to expected (grader.suite.forensics)
    # what the check compared with, where that is built from the submission's own output (the
    # expected shown is still a correct implementation's): the report says so, and prefers others
    basis: str = ""
    # what is wrong where (which batch elements, positions, feature columns) and the error's form, and whether
    # the hint's causes fit it (grader.pattern.found): the report words it
    pattern: Pattern | None = None
    # what the diagnosis reads as data, never from the message (grader.judging.diagnosis): what was
    # compared, as the message names it ("LayerNorm output": the subject of its "looks like");
    subject: str = ""
    # the chain of the submission's frames that made a stray CPU tensor, the maker first (the device
    # checks: the line the diagnosis names);
    made: tuple[Frame, ...] = ()
    # the parameter names a names check lists as missing, unexpected and of the wrong shape, as its
    # `got` shows them; a gradient check's parameter that got no gradient at all
    parameters: Parameters | None = None


class Mismatch(AssertionError):
    """A failed check, with the parts the report shows: expected, got, the error and where, the example."""

    def __init__(self, what: str, *, expected: str = "", got: str = "", example: str = "", hint: str = "",
                 found: Found = Found()):
        super().__init__(what)
        self.what, self.expected, self.got, self.example, self.hint = what, expected, got, example, hint
        self.found = found

    def details(self) -> Details:
        f = self.found
        return Details(expected=self.expected, got=self.got, max_abs_error=f.max_abs_error, where=f.where,
                       example=str(self.example), hint=self.hint, looks_like=f.looks_like, basis=f.basis,
                       pattern=f.pattern, inputs=getattr(self.example, "values", None) or None,
                       subject=f.subject, made=f.made, parameters=f.parameters)


def short(v) -> str:
    if isinstance(v, torch.Tensor):
        return f"{str(v.dtype).removeprefix('torch.')} tensor of shape {tuple(v.shape)}"
    if isinstance(v, Handle):
        return f"an object of type {v.type}"
    text = repr(v)
    return f"{type(v).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


FULL_NUMEL = 64  # tensors up to this size are printed in full, so a failing example can be typed back in


def _number(x, floating: bool) -> str:
    # 9 significant digits round-trip float32: the printed tensor is the tensor the check used
    return f"{x:.9g}" if floating else repr(x)


def _nested(values, floating: bool, depth: int = 0) -> str:
    if not isinstance(values, list):
        return _number(values, floating)
    if values and isinstance(values[0], list):
        sep = ",\n" + " " * (depth + 1)  # one innermost row per line, aligned under its bracket
        return "[" + sep.join(_nested(v, floating, depth + 1) for v in values) + "]"
    return "[" + ", ".join(_number(v, floating) for v in values) + "]"


def _values(t: torch.Tensor, n: int = 8) -> str:
    t = t.detach().cpu()
    floating = t.dtype.is_floating_point
    if t.numel() <= FULL_NUMEL:
        return _nested(t.tolist(), floating)
    first = ", ".join(_number(x, floating) for x in t.reshape(-1)[:n].tolist())
    return f"[{first}, ...] (first {n} of {t.numel()} values, in row-major order)"


def describe(**inputs) -> Example:
    """One entry per input: tensors by dtype and shape, in full when small (9 significant digits, enough
    to rebuild a float32 exactly), else their first values; the rest by repr. The same values as data
    too (the report's "inputs", from which `grade --repro` rebuilds the example). The keywords are the
    inputs, named as the example shows them, not options."""
    lines = []
    for name, v in inputs.items():
        if isinstance(v, torch.Tensor):
            lines.append(f"{name}: {str(v.dtype).removeprefix('torch.')} {tuple(v.shape)} = {_values(v)}")
        else:
            lines.append(f"{name} = {v!r}"[:300])
    return Example("\n".join(lines), {name: encode(v) for name, v in inputs.items()})


def expect_tensor(value, *, name: str, shape=None, dtype=None, example: str = "", hint: str = "") -> torch.Tensor:
    """`value` must be exactly a torch.Tensor (of `shape` and `dtype` when given)."""
    if type(value) is not torch.Tensor:
        raise Mismatch(f"{name} should be a torch.Tensor", expected="a torch.Tensor", got=short(value),
                       example=example, hint=hint)
    if dtype is not None and value.dtype != dtype:
        raise Mismatch(f"{name} has the wrong dtype", expected=str(dtype).removeprefix("torch."),
                       got=str(value.dtype).removeprefix("torch."), example=example, hint=hint,
                       found=Found(subject=name))
    if shape is not None and tuple(value.shape) != tuple(shape):
        from grader.suite.forensics import shape as swapped

        raise Mismatch(f"{name} has the wrong shape", expected=str(tuple(shape)), got=str(tuple(value.shape)),
                       example=example, hint=hint,
                       found=Found(looks_like=swapped(tuple(value.shape), tuple(shape)), subject=name))
    return value


@dataclass(frozen=True)
class Compare:
    """How assert_close compares, passed as one value (`compare=`): within atol (1e-5) + rtol (1e-4) *
    |expected|, only where `mask` is True. `truth`, `basis`: where `expected` is built from the
    submission's own output, what a correct implementation gives (the values shown as expected) and what
    the comparison was with. `alike`: the hint's likely causes would make every batch element (axis 0)
    wrong alike."""

    atol: float | torch.Tensor = 1e-5
    rtol: float = 1e-4
    mask: torch.Tensor | None = None
    truth: torch.Tensor | None = None
    basis: str = ""
    alike: bool = False


def assert_close(got, expected: torch.Tensor, *, name: str, example: str = "", hint: str = "",
                 compare: Compare = Compare()):
    """`got` must match `expected` elementwise, as `compare` says (Compare)."""
    atol, rtol, mask, truth = compare.atol, compare.rtol, compare.mask, compare.truth
    try:
        got = expect_tensor(got, name=name, shape=expected.shape, dtype=expected.dtype, example=example, hint=hint)
    except Mismatch as wrong:
        if not wrong.found.looks_like and type(got) is torch.Tensor and got.dtype != expected.dtype:
            wrong.found = replace(wrong.found, looks_like=_like(got, expected, "dtype"))
        raise
    if expected.dtype.is_floating_point:
        g, e = got.double(), expected.double()
        # NaN and inf never match, not even themselves: an expected value built from the submission's
        # own output (a NaN everywhere) would otherwise pass; the reference's outputs are finite
        finite = torch.isfinite(g) & torch.isfinite(e)
        err = torch.where(finite, (g - e).abs(), torch.full_like(g, float("inf")))
        tol = torch.as_tensor(atol, dtype=torch.float64) + rtol * torch.where(finite, e.abs(), torch.zeros_like(e))
        bad = ~finite | (err > tol)
    else:
        err = (got != expected).double()
        bad = err > 0
    if mask is not None:
        bad = bad & mask
        err = torch.where(mask, err, torch.zeros_like(err))
    if bool(bad.any()):
        index = tuple(int(i) for i in torch.nonzero(bad)[0]) if err.dim() else ()
        shown = expected if truth is None else truth
        if truth is not None:  # the error shown is from the values shown
            err = torch.where(bad, (got.double() - truth.double()).abs(), torch.zeros_like(err))
        worst = tuple(int(i) for i in torch.unravel_index(err.argmax(), err.shape)) if err.dim() else ()
        n_bad, n = int(bad.sum()), bad.numel()
        raise Mismatch(
            f"{name} differs from the expected values at {n_bad} of {n} elements",
            expected=f"{shown[index].item():.6g} at index {list(index)}",
            got=f"{got[index].item():.6g} at index {list(index)}"
            + ("  (not finite)" if not bool(torch.isfinite(got[index]).all()) else ""),
            example=example, hint=hint,
            found=Found(max_abs_error=float(err.max()),
                        where=f"largest error at index {list(worst)}: expected {shown[worst].item():.6g}, "
                              f"got {got[worst].item():.6g}",
                        looks_like=_looks_like(got, expected, mask), basis=compare.basis,
                        pattern=found(bad, got, expected, hint, compare.alike, mask), subject=name))
    return got


def _looks_like(got: torch.Tensor, expected: torch.Tensor, mask: torch.Tensor | None) -> str:
    from grader.suite.forensics import looks_like

    try:  # a phrase is a help, never a reason for a check to fail otherwise
        return looks_like(got, expected, mask)
    except Exception:  # noqa: BLE001
        return ""


def _like(got: torch.Tensor, expected: torch.Tensor, rule: str) -> str:
    from grader.suite import forensics

    try:  # as _looks_like
        return getattr(forensics, rule)(got, expected)
    except Exception:  # noqa: BLE001
        return ""


def expect_error(fn, *, kind: str, names: list[str], example: str = "", hint: str = ""):
    """`fn()` must raise `kind` (in the submission) with a message that mentions every item of `names`."""
    from grader.sandbox.host import StudentError

    try:
        value = fn()
    except StudentError as e:
        if kind not in e.mro:
            raise Mismatch(f"should raise {kind}", expected=kind, got=f"{e.type}: {e.message}"[:300],
                           example=example, hint=hint) from None
        missing = [n for n in names if str(n) not in e.message]
        if missing:
            raise Mismatch(f"the {kind} message should name {', '.join(map(str, names))}",
                           expected=f"a message mentioning {', '.join(map(str, names))}",
                           got=f"{e.type}: {e.message}"[:300], example=example, hint=hint) from None
        return e
    raise Mismatch(f"should raise {kind}", expected=kind, got=f"no error; returned {short(value)}",
                   example=example, hint=hint)
