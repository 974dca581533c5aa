"""Steps that many grading tests share: compare with stored or live reference outputs."""

from functools import cache, lru_cache
from pathlib import Path

import torch

from grader.sandbox.child import state
from grader.sandbox.child.standins.values import plain
from grader.sandbox.child.tree import resolve
from grader.suite import draws
from grader.suite.checks import Compare, assert_close, describe

EXPECTED = Path(__file__).parent / "public" / "expected"


@cache
def _stored(assignment: str) -> dict:
    return torch.load(EXPECTED / f"{assignment}.pt", weights_only=True)


def stored(assignment: str, case: str) -> dict:
    """A stored case: target, args, kwargs, state, inputs and the reference's output."""
    return _stored(assignment)[case]


def examples(student, assignment: str, case: str) -> list[dict]:
    """The stored case; in the instructor's grade (the reference at hand) also the same case drawn
    again from a seed the release does not ship (course.toml's hidden_seed), its output the
    reference's, computed here. The stored inputs and outputs ship with the public tier: a check that
    passes only on them would pay a lookup table of them. Derandomized: the same every grading."""
    found = [_stored(assignment)[case]]
    seed = getattr(student, "fresh_seed", None)
    if seed is not None and student.reference is not None:
        fresh = _fresh(str(student.reference), assignment, case, seed)
        found += [fresh] if fresh is not None else []
    return found


@lru_cache(maxsize=64)  # the seed is each submission's own (grader.suite.draws.for_submission): a batch's worker
def _fresh(reference: str, assignment: str, case: str, seed: int) -> dict | None:
    import dataclasses
    import importlib.util

    from grader.authoring.expected import run_case
    from grader.suite.reference import load

    path = Path(__file__).parent / "cases" / f"{assignment}.py"
    spec = importlib.util.spec_from_file_location(f"_kit_fresh_cases_{assignment}", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = {c.name: c for c in module.CASES}
    if case not in cases:
        return None
    load(Path(reference))  # run_case resolves targets in the reference's package
    with torch.random.fork_rng(devices=[]):  # it seeds torch's generator: the grader's own draws stay as they were
        found = run_case(dataclasses.replace(cases[case], seed=(seed * 1_000_003 + cases[case].seed + 1) % 2**62))
    found["fresh"] = True
    return found


FRESH_HINT = ("This is a second example, drawn afresh for this grading: the public example's answer alone is not "
              "enough. ")


def name_of(target: str) -> str:
    return target.split(":")[-1]


def check_stored(student, assignment: str, case: str, atol: float = 1e-5, hint: str = ""):
    """The submission, given the stored case's weights and inputs, gives the stored output (and so on a
    fresh draw of the case, in the instructor's grade: `examples`)."""
    hint = hint or ("The output on this fixed case differs from the reference's. Likely causes: see the other "
                    "checks of this component, which test one property at a time.")
    for c in examples(student, assignment, case):
        with draws.tagged(bool(c.get("fresh"))):
            _check_one(student, c, atol, hint)


def _check_one(student, c: dict, atol: float, hint: str):
    example = describe(**{f"input{i}": x for i, x in enumerate(c["inputs"])}, args=c["args"], kwargs=c["kwargs"])
    if c["state"]:
        m = student.new(c["target"], *c["args"], **c["kwargs"]).load(c["state"], name_of(c["target"])).eval()
        got = m(*c["inputs"])
    else:
        got = student.call(c["target"], *c["args"], *c["inputs"], kwargs=c["kwargs"])
    assert_close(got, c["output"], name=f"{name_of(c['target'])} output", example=example, compare=Compare(atol=atol),
                 hint=FRESH_HINT + hint if c.get("fresh") else hint)


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
                        example=describe(**inputs, args=args, kwargs=kwargs), compare=Compare(atol=atol), hint=hint)
