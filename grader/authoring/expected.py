"""Stored reference outputs for the public tier, which ships to students without the solutions.

The cases (which component, which arguments, which inputs) live with the suites in
`<suites>/cases/<assignment>.py` as a list `CASES` of `Case`; this module runs them on the
reference and keeps the results in `<suites>/public/expected/<assignment>.pt`.
"""

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader.course import ConfigError, Course
from grader.sandbox.child.tree import import_tree, resolve

REFERENCE = "_kit_reference"


@dataclass
class Case:
    """Build `target(*args, **kwargs)` (kind "module") or call `target(*args, *inputs, **kwargs)`
    (kind "function"); `inputs(generator)` makes the inputs."""
    name: str
    target: str
    args: tuple
    inputs: Callable[[torch.Generator], tuple]
    kwargs: dict = field(default_factory=dict)
    kind: str = "module"
    seed: int = 0


def load_cases(course: Course, assignment: str) -> list[Case]:
    path = course.suites / "cases" / f"{assignment}.py"
    if not path.exists():
        return []
    spec = importlib.util.spec_from_file_location(f"_kit_cases_{assignment}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def path_for(course: Course, assignment: str) -> Path:
    return course.suites / "public" / "expected" / f"{assignment}.pt"


def run_case(case) -> dict:
    """Build the reference's object for `case`, randomise its weights, and record input and output."""
    g = torch.Generator().manual_seed(case.seed)
    inputs = case.inputs(g)
    obj = resolve(REFERENCE, case.target)
    state = {}
    with torch.no_grad():
        if case.kind == "module":
            torch.manual_seed(case.seed)
            module = obj(*case.args, **case.kwargs).eval()
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            state = {k: v.clone() for k, v in module.state_dict().items()}
            output = module(*inputs)
        else:
            output = obj(*case.args, *inputs, **case.kwargs)
    return {"target": case.target, "args": case.args, "kwargs": case.kwargs, "inputs": inputs,
            "state": state, "output": output}


def compute(course: Course, assignment: str) -> dict[str, dict]:
    import_tree(course.reference, REFERENCE)
    return {case.name: run_case(case) for case in load_cases(course, assignment)}


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype \
                or a.shape != b.shape:
            return False
        if not a.is_floating_point():
            return torch.equal(a, b)
        # another CPU (other SIMD width, other thread count) rounds float32 sums differently, by a few
        # ulps of the tensor's largest value: that is not a stale file
        scale = float(b.abs().max()) if b.numel() else 0.0
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6 * max(scale, 1.0))
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def load(course: Course, assignment: str) -> dict[str, dict]:
    return torch.load(path_for(course, assignment), weights_only=True)


def write_all(course: Course, check: bool = False) -> list[Path]:
    stale = []
    for assignment in course.assignments:
        fresh = compute(course, assignment)
        if not fresh:
            continue
        path = path_for(course, assignment)
        if path.exists() and _same(load(course, assignment), fresh):
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(fresh, path)
    return stale
