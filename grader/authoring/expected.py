"""Stored reference outputs for the public tier, which ships to students without the solutions.

The cases (which component, which arguments, which inputs) live with the suites in
`<suites>/cases/<assignment>.py` as a list `CASES` of `Case`; this module runs them on the
reference and keeps the results in `<suites>/public/expected/<assignment>.pt`. The course's
table of classic bugs (`<suites>/bugs.py`, `BUGS`) is graded here too, each bug's tree the
reference with its patches, and what its component's failing public checks say is kept in
`<suites>/public/expected/bugs.json` for grader.judging.diagnosis.
"""

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader import imports
from grader.course import Course
from grader.course_table import ConfigError
from grader.results import Tier
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
    module = imports.load_file(path, f"_kit_cases_{assignment}")
    return module.CASES


def path_for(course: Course, assignment: str) -> Path:
    return course.suites / Tier.PUBLIC / "expected" / f"{assignment}.pt"


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


def bugs_module(course: Course):
    """The course's `bugs.py` (the table of classic bugs), imported; None where it has none."""
    path = course.suites / "bugs.py"
    if not path.exists():
        return None
    module = imports.load_file(path, "_kit_bugs")
    return module


def load_bugs(course: Course) -> dict:
    """The course's table of classic bugs (name -> an object with component, patches, message, fix)."""
    module = bugs_module(course)
    return module.BUGS if module is not None else {}


def bug_tree(course: Course, patches: dict[str, list[tuple[str, str]]], into: Path, name: str) -> Path:
    """A copy of the reference with a bug's patches; each `old` must occur exactly once."""
    shutil.copytree(course.reference, into, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, edits in patches.items():
        path = into / rel
        text = path.read_text()
        for old, new in edits:
            if text.count(old) != 1:
                raise ConfigError(f"bugs.py: {name}: the patch of {rel} does not apply ({old!r} occurs "
                                  f"{text.count(old)} times in the reference)")
            text = text.replace(old, new)
        path.write_text(text)
    return into


def expression_of(course: Course, patches: dict[str, list[tuple[str, str]]]) -> str:
    """A one-line bug's complete fix (grader.authoring.fixes), from the reference's file; "" for others."""
    from grader.authoring.fixes import complete

    if len(patches) != 1 or len(next(iter(patches.values()))) != 1:
        return ""
    (file, [(old, new)]), = patches.items()
    path = course.reference / file
    return complete(path.read_text(), old, new) if path.is_file() else ""


def compute_bugs(course: Course, on_bug: Callable[[str], None] | None = None) -> dict[str, dict]:
    """name -> {component, message, fix, failing: what its component's failing public checks say, and
    repro where --repro has a recipe for one of them: check -> {"inputs": the failing example's data that
    the recipe reads} or {"refused": why it has none}; the kit writes each bug's scripts from these
    without grading again (tests/kit/sandbox/test_repro.py)}."""
    from grader.grading.warm import Grader
    from grader.judging import diagnosis

    table = load_bugs(course)
    if not table:
        return {}
    found = {}
    with tempfile.TemporaryDirectory(prefix="grade-bugs-") as tmp, Grader(course) as grader:
        for name, bug in table.items():
            assignment = next(iter(bug.patches)).partition("/")[0]
            tree = bug_tree(course, bug.patches, Path(tmp) / name, name)
            results = _public_results(course, grader, assignment, bug.component, tree)
            failing = diagnosis.failing_public(course.assignment(assignment), bug.component, results)
            found[name] = {"component": bug.component, "message": bug.message, "fix": bug.fix, "failing": failing}
            if expression := expression_of(course, bug.patches):
                found[name]["expression"] = expression
            if repro := _repro_inputs(course, assignment, failing, results):
                found[name]["repro"] = repro
            if on_bug is not None:  # grade release's progress
                on_bug(name)
    return found


def _repro_inputs(course: Course, assignment: str, failing: dict, results: dict) -> dict[str, dict]:
    """check -> {"inputs": the entries of its failing example's data that its --repro recipe reads} or
    {"refused": why --repro writes no script for it}, for the failing checks that have a recipe. Only
    those entries: the whole example's data would make bugs.json many times larger."""
    from grader.interactive import repro

    recipes = repro.known(course, assignment).examples
    found: dict[str, dict] = {}
    for check in (c for c in failing if c in recipes):
        outcome, names = results[check], recipes[check].inputs
        try:
            repro.failing_example(outcome, names)
        except ValueError as e:
            found[check] = {"refused": f"{outcome.status} {outcome.reason}: {e}"}
            continue
        found[check] = {"inputs": {k: v for k, v in (outcome.details.inputs or {}).items() if k in names}}
    return found


def _public_results(course: Course, grader, assignment: str, component: str, tree: Path) -> dict:
    """The component's public checks only, run as a grade runs them: a bug's signature needs no
    other check (each check draws its own inputs), and assignment4's end-to-end training costs
    a minute a tree. The kit grades every entry in full and holds the result to this one."""
    from grader.grading.suites import one_intra_op_thread, pytest_run
    from grader.suite.remote import Submission

    spec = course.assignment(assignment)
    comp = next(c for c in spec.components if c.name == component)
    sandbox = grader.sandbox(assignment=spec, submission=tree)
    try:
        with one_intra_op_thread():
            student = Submission(sandbox, None, course.reference)
            student.second_set = False  # the table is of the student's draws alone (grader.suite.draws)
            results = pytest_run(course, student, {chk.id: () for chk in comp.checks if chk.tier == Tier.PUBLIC})
    finally:
        sandbox.close()
    return results


def write_all(course: Course, check: bool = False, on_bug: Callable[[str], None] | None = None) -> list[Path]:
    """Write the stored outputs and bugs.json where they differ from what the course makes (`check`:
    only list them); `on_bug(name)` once each bug of the table is graded."""
    from grader.judging import diagnosis

    stale = []
    # the stored outputs first: the bugs are graded by the public checks, which read them (a new
    # check's outputs missing here made every bug's run of it an error, and a second run necessary)
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
    bugs = compute_bugs(course, on_bug)
    path = diagnosis.path_for(course)
    # compared as JSON reads back: a tuple of the data (a pair of a collate example) is a list there
    if bugs and (not path.exists() or json.loads(path.read_text()) != json.loads(json.dumps(bugs))):
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(bugs, indent=1, sort_keys=True) + "\n")
    return stale
