"""What a re-grade after an edit need not run again: the checks of components whose files did not change.

`grade --watch` grades the same submission after each save, and a save touches one file. The
checks of a component give the same outcomes on the same files: examples are derandomized, and
each component's checks already run apart from the others' (a split grading runs them in two
processes, grader.grading.split, with the same JSON). So a warm grader asked to (`Grader(reuse=True)`)
keeps, per component, the outcomes of its checks' first run, with the worker faults and the
forbidden calls they recorded, under a digest of the files that run could execute: the staged
files of the component, of those it depends on and of the modules its checks asked for, with
everything they import (grader.imports). The next grading runs only the components whose digest
changed, and the kept ones take their places in a single run's order; attribution, shrinking,
performance, the forbidden scan and scoring run as before, on the whole.

A file whose imports cannot be read from its source (importlib, exec, reading files) makes its
components run every time. One difference from a whole grade is known: what a module prints when
it is imported shows under the first check of each process that imports it, so a component that
runs again (or each side of a split) shows it again. Only `--watch` keeps the assignment's own checks:
what counts for a grade (a plain `grade`, `grade batch`, Gradescope) runs every one of them. What
attribution learns of the parts of earlier assignments, which earns no points itself, every warm
grader keeps (grader.grading.known_parts).
"""

from __future__ import annotations

import copy
import hashlib
import io
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader.grading.split import Done, calls, merge
from grader.imports import imported
from grader.results import Fault, Outcome

if TYPE_CHECKING:
    from grader.grading.run import GradingRun

# names in code (not in strings or comments) that can run or read files the import graph does not show:
# anywhere, and as builtins only where not an attribute (`model.eval()`, `re.compile` are not)
DYNAMIC = frozenset({"importlib", "__import__", "runpy", "pkgutil", "read_text", "read_bytes", "__file__"})
BUILTINS = frozenset({"exec", "eval", "compile", "open"})


@dataclass
class Kept:
    digest: bytes
    results: dict[str, Outcome]
    faults: list[Fault]
    executed: list[tuple[object, str]]  # (forbidden call, check)
    modules: set[str]  # the submission's modules its checks asked for


@dataclass
class Reuse:
    kept: dict[tuple, Kept] = field(default_factory=dict)  # (context, component) -> what its checks gave
    order: list[str] = field(default_factory=list)  # the checks, in the order of the last single run
    reused: int = 0  # checks not run again, over all gradings

    def recall(self, grading: GradingRun) -> dict[str, Kept]:
        """The kept results of the grading's components whose staged files are unchanged."""
        files, found = Staged(grading.staged), {}
        for comp in grading.assignment.components:
            kept = self.kept.get((grading.context, comp.name))
            if kept is not None and kept.digest == files.digest(
                    component_files(grading, comp.name, files.root, kept.modules)):
                found[comp.name] = kept
        self.reused += sum(len(k.results) for k in found.values())
        return found

    def restore(self, grading: GradingRun, results: dict[str, Outcome], kept: dict[str, Kept]) -> None:
        """The kept components' outcomes, faults and forbidden calls among this grading's, in the places
        of their checks in a single run (grader.grading.split.merge)."""
        if not kept:
            return
        student = grading.student
        student.order = student.order or self.order  # nothing ran: the last run's order
        for k in kept.values():
            results.update(copy.deepcopy(k.results))
        merge(student, Done(faults=[f for k in kept.values() for f in k.faults],
                            executed=[e for k in kept.values() for e in k.executed],
                            modules={name: k.modules for name, k in kept.items()}))

    def keep(self, grading: GradingRun, ran: set[str], results: dict[str, Outcome]) -> None:
        """Keep what the components among `ran` (by name) gave in this grading's first run of their checks."""
        student = grading.student
        faults = list(student.sandbox.faults)
        if any(not f.check for f in faults):
            return  # a fault no check owns: nothing is known to be one component's
        if student.order:
            self.order = list(student.order)
        files, executed = Staged(grading.staged), calls(student)
        for comp in grading.assignment.components:
            if comp.name not in ran:
                continue
            ids = {chk.id for chk in comp.checks}
            modules = set(student.modules.get(comp.name, ()))
            digest = files.digest(component_files(grading, comp.name, files.root, modules))
            if digest is None:
                self.kept.pop((grading.context, comp.name), None)
                continue
            self.kept[(grading.context, comp.name)] = Kept(
                digest, {i: copy.deepcopy(o) for i, o in results.items() if i in ids},
                [f for f in faults if f.check in ids], [(e, c) for e, c in executed if c in ids], modules)


def component_files(grading: GradingRun, name: str, root: Path, modules: set[str]) -> set[Path]:
    """The staged files of component `name`, of those it depends on, and of the modules its checks asked for."""
    components = {c.name: c for a in grading.course.closure(grading.assignment.name) for c in a.components}
    todo, files = [name], set()
    while todo:
        comp = components.get(todo.pop())
        if comp is not None:
            files.add(root / comp.assignment / comp.file)
            todo += comp.depends
    for module in modules:
        stem = root.joinpath(*module.split("."))
        files |= {stem.with_suffix(".py"), stem / "__init__.py"}
    return {f for f in files if f.is_file()}


class Staged:
    """The staged files of one grading, each read and parsed once."""

    def __init__(self, staged: Path):
        self.root = staged.resolve()
        self.sources: dict[Path, bytes] = {}
        self.imports: dict[Path, set[Path] | None] = {}

    def digest(self, start: set[Path]) -> bytes | None:
        """Of `start` and what they import; None where one may run what its imports do not show."""
        found, todo = set(), [p.resolve() for p in start]
        while todo:
            path = todo.pop()
            if path in found:
                continue
            found.add(path)
            if path not in self.sources:
                self.sources[path] = path.read_bytes()
                try:
                    self.imports[path] = imported(path, self.root)
                except (SyntaxError, ValueError, UnicodeDecodeError):  # it does not parse: its checks run
                    self.imports[path] = None
            more = self.imports[path]
            if more is None or _dynamic(self.sources[path]):
                return None
            todo += more - found
        h = hashlib.blake2b(digest_size=20)
        for path in sorted(found):
            h.update(f"{path.relative_to(self.root)}\0{len(self.sources[path])}\0".encode() + self.sources[path])
        return h.digest()


def _dynamic(source: bytes) -> bool:
    """Whether `source`'s code names what can import or read beyond its import statements (sys.modules
    included); True where it does not tokenize."""
    try:
        tokens = [t for t in tokenize.tokenize(io.BytesIO(source).readline) if t.type in (tokenize.NAME, tokenize.OP)]
    except (tokenize.TokenError, SyntaxError):
        return True
    for i, t in enumerate(tokens):
        after_dot = i > 0 and tokens[i - 1].string == "."
        if t.type != tokenize.NAME:
            continue
        if t.string in DYNAMIC or t.string in BUILTINS and not after_dot:
            return True
        if t.string == "modules" and after_dot and i > 1 and tokens[i - 2].string == "sys":
            return True
    return False
