"""Which checks `grade --repro` can write a script for, found through the course.

- Checks that compare with stored reference outputs: each test of the public suite that calls
  check_stored(student, "assignmentN", "case", atol=...) with constants (read from its source), and
  those the course's recipes name in STORED.
- Checks whose failing example the report carries as data (a failed check's "inputs"): the course's
  recipes, `<suites>/public/repro.py` (it ships with the public tier), RECIPES: check id -> Recipe.

Every other public check gets a reason: the course's WHY_NOT (check id, or the end of one) or DEFAULT.
"""

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import imports
from grader.course import Assignment, Course
from grader.imports import import_root
from grader.results import Tier

DEFAULT = "the course has no recipe for it (--only {check} runs it alone)"


@dataclass(frozen=True)
class Recipe:
    inputs: tuple[str, ...]  # the entries of the failing example's data ("inputs") that the script needs
    body: Callable[[dict], str]  # those values -> the script's source after the prelude; it defines main()


@dataclass(frozen=True)
class Known:
    """What --repro knows of one assignment."""
    examples: dict[str, Recipe]  # check id -> how its failing example becomes a script
    stored: dict[str, list[tuple]]  # check id -> [(stored case, atol)] ((case, atol, False): without its weights)
    why_not: dict[str, str]  # check id, or the end of one -> why no script is written for it

    def reason(self, check: str) -> str:
        """Why `check` gets no script (one line)."""
        ends = [end for end in self.why_not if check.endswith(end)]
        return self.why_not[max(ends, key=len)] if ends else DEFAULT.format(check=check)


def known(course: Course, assignment: str) -> Known:
    module = _recipes(course.suites / Tier.PUBLIC / "repro.py")
    stored = {**stored_cases(course, assignment), **getattr(module, "STORED", {}).get(assignment, {})}
    return Known(dict(getattr(module, "RECIPES", {})), stored, dict(getattr(module, "WHY_NOT", {})))


def reproducible(course: Course, spec: Assignment) -> list[str]:
    """The public checks of `spec` that --repro can write a script for, in course.toml's order."""
    found = known(course, spec.name)
    can = set(found.stored) | set(found.examples)
    return [chk.id for comp in spec.components for chk in comp.checks if chk.tier == Tier.PUBLIC and chk.id in can]


def stored_cases(course: Course, assignment: str) -> dict[str, list[tuple[str, float]]]:
    """check id -> [(stored case, atol)], read from the public suite's source: each test that calls
    check_stored(student, "assignmentN", "case", atol=...) with constants."""
    path = course.suites / Tier.PUBLIC / f"test_{assignment}.py"
    if not path.is_file():
        return {}
    stat = path.stat()
    return {check: list(cases) for check, cases in _stored_in(path, stat.st_mtime_ns, stat.st_size).items()}


@cache
def _stored_in(path: Path, mtime_ns: int, size: int) -> dict[str, list[tuple[str, float]]]:
    """stored_cases of one version of the suite's file (keyed by its time and size: parsing it costs
    tens of milliseconds, and the kit writes hundreds of scripts in one process)."""
    found: dict[str, list[tuple[str, float]]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            cases = [case for call in ast.walk(node) if (case := _stored_call(call)) is not None]
            if cases:
                found[node.name.removeprefix("test_")] = cases
    return found


def _stored_call(node: ast.AST) -> tuple[str, float] | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check_stored"
            and len(node.args) >= 3 and all(isinstance(a, ast.Constant) for a in node.args[1:3])):
        return None
    case = node.args[2]
    assert isinstance(case, ast.Constant)
    given = [k.value.value for k in node.keywords if k.arg == "atol" and isinstance(k.value, ast.Constant)]
    return str(case.value), float(given[0]) if given and isinstance(given[0], (int, float)) else 1e-5


@cache
def _recipes(path: Path):
    """The course's recipes module, imported as the suites are (`import tests.grading...` works); None
    where the course has none."""
    if not path.is_file():
        return None
    root = str(import_root(path.parent))
    if root not in sys.path:
        sys.path.insert(0, root)
    module = imports.load_file(path, "_kit_repro_recipes")
    return module
