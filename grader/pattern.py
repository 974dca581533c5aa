"""The pattern of a failed comparison, as data: which batch elements, sequence positions, feature
columns or entries of a square map are wrong, and whether the error has a simple form (every value off
by one amount, each feature column by its own). A check's hint may declare which of these its likely
causes explain (`Hint`); the report shows those causes only where they fit (`fits`), else the pattern
in words (grader.words.pattern).

The kinds and `fits` are pure Python (grader.words and grader.judging.telling use them without
torch); `found` reads the tensors (torch is imported there)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class Kind(StrEnum):
    """What is wrong where. Location kinds first, then the forms of the error (`FORMS`)."""

    SOME_BATCH = "some_batch"            # only some batch elements (axis B)
    FIRST_POSITION = "first_position"    # only position 0 (axis T)
    LAST_POSITION = "last_position"      # only the last position
    FROM_POSITION = "from_position"      # every position from some t > 0 on, the same t in each batch element
    PADDED_TAIL = "padded_tail"          # in each batch element the positions from its own t on (padding's start)
    SOME_POSITIONS = "some_positions"    # another subset of positions
    ODD_FEATURES = "odd_features"        # only odd feature columns (axis C)
    EVEN_FEATURES = "even_features"      # only even ones
    SOME_FEATURES = "some_features"      # another subset of feature columns
    DIAGONAL = "diagonal"                # only [.., i, i] of a square map (axes T, K)
    ABOVE_DIAGONAL = "above_diagonal"    # only [.., i, j] with j > i: a later key than the query
    BELOW_DIAGONAL = "below_diagonal"    # only j < i
    EVERYWHERE = "everywhere"            # every element compared is wrong
    SCATTERED = "scattered"              # some elements, in none of the forms above
    OFFSET = "offset"                    # got - expected is one amount everywhere
    FEATURE_OFFSET = "feature_offset"    # got - expected is constant down each feature column (a bias, beta)
    SCALE = "scale"                      # got / expected is one factor everywhere
    FEATURE_SCALE = "feature_scale"      # got / expected is constant down each feature column (a gain, gamma)


FORMS = frozenset({Kind.OFFSET, Kind.FEATURE_OFFSET, Kind.SCALE, Kind.FEATURE_SCALE})
# a hint that explains a kind explains the kinds under it: "some positions" covers "only the last one";
# "scattered" (in no form found) covers nothing else
_PARENT = {Kind.FIRST_POSITION: Kind.SOME_POSITIONS, Kind.LAST_POSITION: Kind.SOME_POSITIONS,
           Kind.FROM_POSITION: Kind.SOME_POSITIONS, Kind.PADDED_TAIL: Kind.SOME_POSITIONS,
           Kind.ODD_FEATURES: Kind.SOME_FEATURES, Kind.EVEN_FEATURES: Kind.SOME_FEATURES,
           Kind.OFFSET: Kind.FEATURE_OFFSET, Kind.SCALE: Kind.FEATURE_SCALE}


class Hint(str):
    """A check's hint whose likely causes declare the patterns they explain (`fits`, kinds); `axes`
    names the compared tensor's axes where the default reading would be wrong, one letter each: B batch,
    T positions, C feature columns, K key positions (the columns of a square map), "." any other. A
    plain str hint declares nothing and fits every failure."""

    fits: frozenset[Kind]
    axes: str

    def __new__(cls, text: str, *fits: Kind | str, axes: str = "") -> Hint:
        hint = super().__new__(cls, text)
        hint.fits, hint.axes = frozenset(Kind(k) for k in fits), axes
        return hint

    def __add__(self, other: str) -> Hint:  # a prefix or suffix keeps the declaration
        return Hint(str(self) + other, *self.fits, axes=self.axes)

    def __radd__(self, other: str) -> Hint:
        return Hint(other + str(self), *self.fits, axes=self.axes)


def _explained(kind: Kind, declared: frozenset[Kind]) -> bool:
    k: Kind | None = kind
    while k is not None:
        if k in declared:
            return True
        k = _PARENT.get(k)
    return False


def fits(observed: list[str] | tuple[str, ...], declared: list[str] | tuple[str, ...] | frozenset) -> bool:
    """Whether causes that explain the `declared` kinds explain a failure of the `observed` kinds: each
    observed kind, where it is wrong and the error's form alike, is declared or under a declared one
    (causes whose errors have no simple form declare no form: a failure with one is not theirs).
    Causes that declare nothing fit everything."""
    said = frozenset(Kind(k) for k in declared if k in Kind._value2member_map_)
    return not said or all(_explained(Kind(k), said) for k in observed if k in Kind._value2member_map_)


def default_axes(shape: tuple[int, ...]) -> str:
    """(B, C); (B, T, C); (B, h, T, T_k) attention maps and masks; more: the last two read as (T, C)."""
    if len(shape) < 2:
        return ""
    if len(shape) == 2:
        return "BC"
    if len(shape) == 4:
        return "B.TK"
    return "B" + "." * (len(shape) - 3) + "TC"


def _along(bad, axis: int) -> list[int]:
    """The indices along `axis` that hold a wrong element."""
    other = tuple(a for a in range(bad.dim()) if a != axis)
    hit = bad.any(dim=other) if other else bad
    return [int(i) for i in hit.nonzero().flatten()]


def _suffix(rows: list[int], n: int) -> int | None:
    """t where `rows` is t..n-1, else None."""
    return rows[0] if rows and rows == list(range(rows[0], n)) else None


def _positions(bad, t: int, b: int | None) -> tuple[list[Kind], dict]:
    n = bad.shape[t]
    rows = _along(bad, t)
    if b is not None and b != t:  # each batch element wrong from its own position on: where its padding starts
        starts = {i: _suffix(_along(bad.select(b, i), t - (t > b)), n) for i in _along(bad, b)}
        known = [s for s in starts.values() if s is not None]
        if len(known) == len(starts) and len(set(known)) > 1 and max(known) > 0:
            return [Kind.PADDED_TAIL], {"starts": {str(i): s for i, s in starts.items()}, "positions": n}
    if len(rows) == n:
        return [], {}
    if rows == [0]:
        return [Kind.FIRST_POSITION], {"positions": n}
    if rows == [n - 1]:
        return [Kind.LAST_POSITION], {"positions": n}
    start = _suffix(rows, n)
    if start is not None:
        return [Kind.FROM_POSITION], {"start": start, "positions": n}
    return [Kind.SOME_POSITIONS], {"rows": tuple(rows[:12]), "positions": n}


def _features(bad, c: int) -> tuple[list[Kind], dict]:
    n = bad.shape[c]
    cols = _along(bad, c)
    if len(cols) == n:
        return [], {}
    data = {"columns": tuple(cols[:12]), "features": n}
    # one wrong column of two is not "the odd ones": every odd (even) column, or two of them at least
    for kind, parity in ((Kind.ODD_FEATURES, 1), (Kind.EVEN_FEATURES, 0)):
        if all(i % 2 == parity for i in cols) and (len(cols) > 1 or cols == list(range(parity, n, 2)) and n > 2):
            return [kind], data
    return [Kind.SOME_FEATURES], data


def _square(bad) -> list[Kind]:
    n = bad.shape[-1]
    where = bad.reshape(-1, n, n).any(dim=0).nonzero()
    i, j = where[:, 0], where[:, 1]
    for kind, rule in ((Kind.DIAGONAL, i == j), (Kind.ABOVE_DIAGONAL, j > i), (Kind.BELOW_DIAGONAL, j < i)):
        if bool(rule.all()):
            return [kind]
    return []


def _constant(values, tol: float) -> bool:
    return bool(((values - values.mean(dim=0)).abs() <= tol).all())


def _forms(diff, ratio) -> tuple[list[Kind], dict]:
    """The error's form over (rows, columns): one amount or factor, or one per feature column."""
    tol = 1e-3 * float(diff.abs().max()) + 1e-7
    if _constant(diff, tol):
        if _constant(diff.reshape(-1), tol):
            return [Kind.OFFSET], {"offset": round(float(diff.mean()), 6)}
        return [Kind.FEATURE_OFFSET], {"offsets": tuple(round(float(v), 4) for v in diff.mean(dim=0)[:8])}
    if ratio is not None and _constant(ratio, 1e-3 * float(ratio.abs().max()) + 1e-7):
        if _constant(ratio.reshape(-1), 1e-3 * float(ratio.abs().max()) + 1e-7):
            return [Kind.SCALE], {"scale": round(float(ratio.mean()), 6)}
        return [Kind.FEATURE_SCALE], {"scales": tuple(round(float(v), 4) for v in ratio.mean(dim=0)[:8])}
    return [], {}


def _values(bad, got, expected, mask) -> tuple[list[Kind], dict]:
    import torch

    if mask is not None and not bool(mask.all()) or not expected.dtype.is_floating_point or bad.dim() == 0:
        return [], {}
    g, e = got.detach().double().cpu(), expected.detach().double().cpu()
    if not bool(torch.isfinite(g).all() and torch.isfinite(e).all()):
        return [], {}
    cols = e.shape[-1] if e.dim() >= 2 else 1
    g, e = g.reshape(-1, cols), e.reshape(-1, cols)
    if g.shape[0] < 2 and cols < 2:
        return [], {}
    ratio = g / e if bool((e.abs() > 1e-6).all()) else None
    if g.shape[0] < 2:  # one row: only one amount or factor for all of it says something
        found, data = _forms(g - e, ratio)
        return ([k for k in found if k in (Kind.OFFSET, Kind.SCALE)], data) if found[:1] in ([Kind.OFFSET],
                                                                                         [Kind.SCALE]) else ([], {})
    return _forms(g - e, ratio)


@dataclass(frozen=True)
class Pattern:
    """What `found` read of a failed comparison: `kinds` (Kind values: what is wrong where, then the error's
    form), `fits` (the kinds the check's hint declares its causes explain), `alike` (the check says its
    causes change every batch element alike), and what the words need for the kinds found
    (grader.words.pattern). Its JSON (a report's "pattern") writes the fields that are set under the keys
    reports have always had; `start` is written "from"."""

    kinds: tuple[str, ...] | None = ()  # None: a pattern written before kinds (only some batch elements)
    fits: tuple[str, ...] = ()
    alike: bool = False
    wrong: tuple[int, ...] = ()  # SOME_BATCH: the batch elements wrong, of `batch`
    batch: int = 0
    positions: int = 0  # the position kinds: how many positions; FROM_POSITION's `start`, SOME_POSITIONS' `rows`
    start: int | None = None
    starts: dict[str, int] | None = None  # PADDED_TAIL: each batch element's first wrong position
    rows: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()  # the feature kinds: the columns wrong, of `features`
    features: int = 0
    offset: float | None = None  # the forms: the amount or factor, one or per feature column
    offsets: tuple[float, ...] = ()
    scale: float | None = None
    scales: tuple[float, ...] = ()

    def to_json(self) -> dict:
        data: dict = {} if self.kinds is None else {"kinds": list(self.kinds)}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if value == f.default:  # unset (a place or an amount may be 0: those are unset as None)
                continue
            data["from" if f.name == "start" else f.name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: object) -> Pattern | None:
        """The Pattern a report's "pattern" holds; None where it is not a table. A field whose value is not of
        its form (a document written by hand) is left unset, so that wording it cannot fail."""
        if not isinstance(data, dict):
            return None
        kept: dict = {} if "kinds" in data else {"kinds": None}
        for f in fields(cls):
            value = _of_form(f.name, data.get("from" if f.name == "start" else f.name))
            if value is not None:
                kept[f.name] = value
        return cls(**kept)


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _of_form(name: str, value):
    """`value` read from JSON as Pattern's field `name` holds it; None where it is not of that form."""
    if name in ("kinds", "fits"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif name == "starts":
        ok = isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
    elif name in ("wrong", "rows", "columns", "offsets", "scales"):
        ok = isinstance(value, list) and all(_number(v) for v in value)
    elif name == "alike":
        ok = isinstance(value, bool)
    elif name in ("offset", "scale"):
        ok = _number(value)
    else:  # batch, positions, features, start: counts and places
        ok = isinstance(value, int) and not isinstance(value, bool)
    return (tuple(value) if isinstance(value, list) else value) if ok else None


def found(bad, got, expected, hint: str = "", alike: bool = False, mask=None) -> Pattern | None:
    """The pattern of `bad` (the elements that failed the comparison of `got` with `expected`, both of
    its shape; `mask`: those compared), or None where there is none to tell (a scalar, nothing
    wrong). `fits`: what the hint's causes explain (its declaration, or every batch element alike where the
    check says so: `alike`)."""
    declared = tuple(str(k) for k in sorted(getattr(hint, "fits", frozenset())) or ([Kind.EVERYWHERE] if alike else []))
    if bad.dim() == 0 or not bool(bad.any()) or bad.numel() == 1:  # one element: no pattern to tell by
        return Pattern(fits=declared) if declared and bool(bad.any()) else None
    axes = getattr(hint, "axes", "") or default_axes(tuple(bad.shape))
    if len(axes) != bad.dim():
        return None
    kinds: list[Kind] = []
    data: dict = {}
    b = axes.find("B") if "B" in axes and bad.shape[axes.find("B")] > 1 else None
    if b is not None:
        wrong = _along(bad, b)
        if len(wrong) < bad.shape[b]:
            kinds.append(Kind.SOME_BATCH)
            data.update(wrong=tuple(wrong), batch=int(bad.shape[b]))
    square = axes.endswith("TK") and bad.shape[-1] == bad.shape[-2] > 1
    located = _square(bad) if square else []
    kinds += located
    if not located and "T" in axes and bad.shape[axes.find("T")] > 1:
        more, said = _positions(bad, axes.find("T"), b)
        kinds, data = kinds + more, {**data, **said}
    if not located and "C" in axes and bad.shape[axes.find("C")] > 1:
        more, said = _features(bad, axes.find("C"))
        kinds, data = kinds + more, {**data, **said}
    checked = bad if mask is None else bad | ~mask
    if bool(checked.all()):
        kinds.append(Kind.EVERYWHERE)
    elif not kinds:
        kinds.append(Kind.SCATTERED)
    if "C" in axes[-1:]:
        more, said = _values(bad, got, expected, mask)
        kinds, data = kinds + more, {**data, **said}
    return Pattern(kinds=tuple(str(k) for k in kinds), fits=declared, alike=alike, **data)
