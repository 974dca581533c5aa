"""Steps that many grading tests share: compare with stored or live reference outputs."""

from functools import cache
from pathlib import Path

import torch

from grader.sandbox.child import state
from grader.sandbox.child.values import plain
from grader.suite.checks import assert_close, describe
from grader.suite.reference import resolve

EXPECTED = Path(__file__).parent / "public" / "expected"


@cache
def _stored(assignment: str) -> dict:
    return torch.load(EXPECTED / f"{assignment}.pt", weights_only=True)


def stored(assignment: str, case: str) -> dict:
    """A stored case: target, args, kwargs, state, inputs and the reference's output."""
    return _stored(assignment)[case]


def name_of(target: str) -> str:
    return target.split(":")[-1]


def check_stored(student, assignment: str, case: str, atol: float = 1e-5, hint: str = ""):
    """The submission, given the stored case's weights and inputs, gives the stored output."""
    c = _stored(assignment)[case]
    example = describe(**{f"input{i}": x for i, x in enumerate(c["inputs"])}, args=c["args"], kwargs=c["kwargs"])
    if c["state"]:
        m = student.new(c["target"], *c["args"], **c["kwargs"]).load(c["state"], name_of(c["target"])).eval()
        got = m(*c["inputs"])
    else:
        got = student.call(c["target"], *c["args"], *c["inputs"], **c["kwargs"])
    return assert_close(got, c["output"], name=f"{name_of(c['target'])} output", example=example, atol=atol,
                        hint=hint or "The output on this fixed case differs from the reference's. Likely causes: see "
                                     "the other checks of this component, which test one property at a time.")


def reference_module(reference: str, target: str, *args, seed: int = 0, **kwargs) -> torch.nn.Module:
    """The reference's module with random weights (so a missed scale or bias shows); callers only read it."""
    key = repr((reference, target, args, kwargs, seed)) if all(map(plain, [*args, *kwargs.values()])) else None
    if key in _BUILT:  # the same module, and the CPU generator where building it again leaves it
        module, after = _BUILT[key]
        state.seed(seed)
        torch.default_generator.set_state(after)
        return module
    state.seed(seed)
    module = resolve(reference, target)(*args, **kwargs).eval()
    after = torch.default_generator.get_state()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    if key is not None:
        if len(_BUILT) >= 1024:
            _BUILT.clear()
        _BUILT[key] = (module, after)
    return module


# Derandomized examples build the same modules in every grading of a warm grader
_BUILT: dict[str, tuple[torch.nn.Module, torch.Tensor]] = {}


def check_reference(student, reference: str, target: str, args: tuple, inputs: dict, kwargs: dict | None = None,
                    seed: int = 0, atol: float = 1e-5, hint: str = ""):
    """The submission, given the reference's weights by name, gives the reference's output."""
    kwargs = kwargs or {}
    ref = reference_module(reference, target, *args, seed=seed, **kwargs)
    with torch.no_grad():
        expected = ref(*inputs.values())
    m = student.new(target, *args, **kwargs).load(ref.state_dict(), name_of(target)).eval()
    return assert_close(m(*inputs.values()), expected, name=f"{name_of(target)} output",
                        example=describe(**inputs, args=args, kwargs=kwargs), atol=atol, hint=hint)
