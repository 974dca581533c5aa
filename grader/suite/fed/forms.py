"""What the worker's answers to the fed run must be like (grader.suite.fed.composite), and what that run
cannot serve: anything else is no evidence (Unsupported), and the grader never computes on it."""

import torch


class Unsupported(Exception):
    """What the fed run cannot do in the grader: the check's outcome is then no evidence."""


def entries(answer, key: str, kind: type = list) -> list:
    """`answer[key]`, a list of `kind` (lists: each named by a string first), as a worker's honest answer
    to params or load is; else Unsupported."""
    entries = answer.get(key) if isinstance(answer, dict) else None
    if isinstance(entries, list) and all(isinstance(e, str) if kind is str else
                                         isinstance(e, list) and e and isinstance(e[0], str) for e in entries):
        return entries
    raise Unsupported(f"the part's {key!r} is not a list of names")


def meta(v):
    """`v` on the meta device: tensors as shapes and dtypes, callables (a sublayer) as one that keeps the
    form of its input, as a sublayer's contract says (student-api: (B, T, d_model) to (B, T, d_model))."""
    if isinstance(v, torch.Tensor):
        return v.detach().to("meta")
    if type(v) in (list, tuple):
        return type(v)(meta(x) for x in v)
    if type(v) is dict:
        return {k: meta(x) for k, x in v.items()}
    if callable(v) and not isinstance(v, type):
        return _same_form
    return v


def _same_form(x, *args, **kwargs):
    return x


class Formless(Exception):
    """A value with no form `signature` can write."""


def signature(v):
    """What of `v` decides the form of a reference part's output on it (grader.suite.fed.composite.Fed._like):
    a tensor's shape and dtype, a callable as any (meta maps it to one that keeps its input's form), plain
    values as they are; anything else is Formless."""
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(v.shape), v.dtype)
    if type(v) in (list, tuple):
        return (type(v).__name__, *(signature(x) for x in v))
    if type(v) is dict and all(type(k) is str for k in v):
        return ("dict", *((k, signature(x)) for k, x in v.items()))
    if v is None or type(v) in (bool, int, float, str):
        return (type(v).__name__, v)
    if callable(v) and not isinstance(v, type):
        return ("callable",)
    raise Formless(type(v).__name__)


def fitted(got, like, arranged: bool = False):
    """`got`, from the worker, where it has the form of `like` (the reference's, on meta): plain tensors of
    the same shapes and dtypes, in the same nesting; else Unsupported (no evidence either way). With
    `arranged`, a tensor may also have its elements otherwise arranged (a part's output with its
    dimensions swapped, a classic bug): as many dimensions, none longer than the reference's longest,
    and no more elements, so that the grader computes on no more than the reference's would give it."""
    if isinstance(like, torch.Tensor):
        if type(got) is torch.Tensor and got.dtype == like.dtype and (got.shape == like.shape or arranged and (
                got.dim() == like.dim() and got.numel() <= like.numel() and max(got.shape) <= max(like.shape))):
            return got
    elif type(like) in (list, tuple) and type(got) is type(like) and len(got) == len(like):
        return type(like)(fitted(g, x, arranged) for g, x in zip(got, like, strict=True))
    elif like is None and got is None:
        return None
    raise Unsupported("the submission's part returned what the reference's part could not (its form)")


def refuse_callables(value) -> None:
    if callable(value) and not isinstance(value, (torch.Tensor, type)):
        raise Unsupported("a callable handed to the submission's part")
    if type(value) in (list, tuple):
        for v in value:
            refuse_callables(v)
    elif type(value) is dict:
        for v in value.values():
            refuse_callables(v)
