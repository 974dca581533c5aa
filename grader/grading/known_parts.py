"""What the parts of earlier assignments gave when attribution ran their checks, kept across gradings.

Attribution (grader.judging.attribution) runs the checks of a composite's parts that live in other
assignments (assignment3's ResidualConnection builds on assignment1's LayerNorm) only to learn whether
they fail: their outcomes earn no points in this grading, they decide where its composites' failures
are laid. A class whose assignment3 hands in the same assignment1 and assignment2 files (a course that
gives out their solutions, the kit's trees of one bug each) runs those checks on the same files for
every submission. Their checks give the same outcomes on the same files (grader.grading.reuse: examples
are derandomized, and each component's checks run apart from the others' with the same JSON), so a warm
grader (grader.grading.warm) keeps them per part, under the digest of the files its checks can run: its
own, its parts', the modules its checks asked for, and everything they import. A part whose files
changed, or that may run what its imports do not show, runs again.

What is kept must be a function of those files alone, never of another submission's code: the parts run
in a fresh worker, forked from the template, that has imported nothing of this assignment (whose modules
could have patched torch at import, in the worker the grading used so far). Only what the machine did
not decide is kept: no check that timed out, crashed, was tampered with or met the grader's own
trouble, and no restart of the worker while they ran. Without a template (a cold `grade`, one grading)
nothing is kept, and the parts run where the grading's checks ran, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader.grading.reuse import Staged, component_files
from grader.results import Outcome, Reason

if TYPE_CHECKING:
    from grader.grading.run import GradingRun

UNSTEADY = frozenset({Reason.TIMEOUT, Reason.CRASH, Reason.TAMPER, Reason.GRADER})  # what the machine may decide


@dataclass
class _Kept:
    digest: bytes
    modules: set[str]
    results: dict[str, Outcome]


@dataclass
class KnownParts:
    kept: dict[tuple, _Kept] = field(default_factory=dict)  # (part, device, tier) -> what its checks gave
    reused: int = 0  # parts not run again, over all gradings

    def run(self, grading: GradingRun, checks: list[str]) -> dict[str, Outcome]:
        """The outcomes of `checks` (parts of other assignments, each run until its first failure), the
        kept ones of parts whose files are unchanged."""
        components = {c.name: c for a in grading.course.closure(grading.assignment.name) for c in a.components}
        part_of = {chk.id: c.name for c in components.values() for chk in c.checks}
        parts = list(dict.fromkeys(part_of[check] for check in checks))
        files, found = Staged(grading.staged), {}
        for part in parts:
            kept = self.kept.get(self._key(grading, part))
            if kept is not None and kept.digest == self._digest(grading, files, part, kept.modules):
                found[part] = kept.results
        self.reused += len(found)
        todo = [check for check in checks if part_of[check] not in found]
        # the grader's own template (a sandbox without one may borrow a spare after a fault): a cold `grade`
        # grades once and keeps nothing
        keep = bool(todo) and grading.services.template is not None
        if keep:
            grading.sandbox.renew()
        faults = len(grading.sandbox.faults)
        results = grading.run(dict.fromkeys(todo, ()), quick=frozenset(todo), one_failure=True) if todo else {}
        if keep and len(grading.sandbox.faults) == faults:
            for part in dict.fromkeys(part_of[check] for check in todo):
                ids = {chk.id for chk in components[part].checks} & set(todo)
                mine = {i: o for i, o in results.items() if i in ids}
                modules = set(grading.student.modules.get(part, ()))
                digest = self._digest(grading, files, part, modules)
                if digest is not None and not any(o.reason in UNSTEADY for o in mine.values()):
                    self.kept[self._key(grading, part)] = _Kept(digest, modules, mine)
        for kept_results in found.values():
            results.update(kept_results)
        return results

    @staticmethod
    def _digest(grading: GradingRun, files: Staged, part: str, modules: set[str]) -> bytes | None:
        """Of the files `part`'s checks can run; None where its own file was not staged (nothing to key on)."""
        spec = next(c for a in grading.course.closure(grading.assignment.name) for c in a.components if c.name == part)
        start = component_files(grading, part, files.root, modules)
        return files.digest(start) if files.root / spec.assignment / spec.file in start else None

    @staticmethod
    def _key(grading: GradingRun, part: str) -> tuple:
        return part, grading.options.device, grading.has_reference
