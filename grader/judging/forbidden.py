"""Forbidden APIs: what course.toml says a component must not use, found in its source or seen run.

Each layer alone is easy to evade, so there are two:
- source: the component's file, as staged for grading, is parsed (ast). An attribute chain or a
  name that resolves, through the file's imports, to a forbidden API (`nn.LayerNorm`,
  `torch.nn.functional.layer_norm`, `ln` after `from torch.nn.functional import layer_norm as ln`,
  `torch.nn.modules.normalization.LayerNorm`: compared as torch objects, not as text), and such an
  import itself, is a hit; "name(keyword)" entries hit only calls that pass the keyword.
- executed: the worker records the forbidden APIs the submission's code runs, however it reached
  them (grader.sandbox.child.record); its record is checked here, entry by entry.

A hit scores its component 0. The tools of evasion are flagged: getattr with a computed name,
eval/exec/compile, __import__/importlib/builtins, torch.ops, torch._C, torch.library, torch.overrides
and torch.utils._python_dispatch (which could switch the recorder off), operator.attrgetter and
methodcaller, work in another process (os.fork, multiprocessing, subprocess: the recorder sees
nothing there), the grader's own package, and testing for the devices the placement check runs a
forward on (naming "meta" or "lazy", or telling them from the CPU: code can behave right there alone).
What they reach may never show in the worker's record, which the submission can switch off
(docs/explanation/security.md, the threat model), so a flag can be a score: the course's `[policy]
flagged = "hold"` holds the component's points at 0 for the instructor's review (the default; an
override releases them); "count" only reports it.

What is scanned is what grading can run: the whole file but a top-level `if __name__ ==
"__main__":` block, which runs only when the file is run as a script (a student's self-test that
compares with the forbidden API, as the stubs invite) and never when grading imports it.

Every Python file of the staged submission is read, not only the components' own: a helper in the
package's `__init__.py` or in a sibling's file is the submission's code all the same. A finding
inside a top-level class or function named after a component of the file belongs to that component
alone; anywhere else in the file (module level, helpers) it belongs to every component of the file
that forbids it (a flag: to every component of the file). A finding that no component of its file takes
(an `__init__.py`, another assignment's file, a sibling that allows it) goes to the components that
reach it: from the source, those whose files import it (directly or not, packages' `__init__.py`
included); run, the component whose check made the call.

Introspection that could reach a forbidden name or the kit's recorder around the names the scan
resolves (sys.modules, vars(), globals(), __dict__, gc, frames, importlib, ctypes, inspect) is
flagged with its line; `vars(F)["layer_norm"]`, `F.__dict__["layer_norm"]` and `getattr(F,
"layer_norm")` with a constant name are read as `F.layer_norm`.
"""

from collections.abc import Sequence
from pathlib import Path

from grader.course import Assignment, Component
from grader.findings import Seen, Sighting
from grader.imports import imported
from grader.judging.forbidden_scan import Finding, scan

_FILES = 400  # Python files read per submission: the staged whitelist holds far fewer
_LIMIT = 10  # findings kept per component: one is enough to decide, a few help the reader

def executed(record: list, apis: set[str], checks: Sequence[str] = ()) -> list[tuple[Finding, str | None]]:
    """The worker's record ([name, file, line, qualname] entries), as far as it is well formed, each
    with the check that made it (`checks`, entry by entry, where known)."""
    found = []
    entries = record if isinstance(record, list) else []
    made_by = list(checks) if len(checks) == len(entries) else [None] * len(entries)
    for entry, check in zip(entries, made_by, strict=True):
        if not (isinstance(entry, list) and len(entry) == 4 and entry[0] in apis and isinstance(entry[1], str)
                and type(entry[2]) is int and isinstance(entry[3], str)):
            continue
        found.append((Finding(entry[0], entry[1], entry[2], entry[3].partition(".")[0], Seen.EXECUTED), check))
    return found


def _owners(components: list[Component], f: Finding, hit: bool) -> list[Component]:
    mine = [c for c in components if f"{c.assignment}/{c.file}" == f.file]
    if hit:
        mine = [c for c in mine if f.what in c.forbidden]
    if f.scope in {c.name for c in components if f"{c.assignment}/{c.file}" == f.file}:
        return [c for c in mine if c.name == f.scope]
    return mine


def reach(staged: Path, components: list[Component]) -> dict[str, set[str]]:
    """Component name -> the staged files ("assignment1/__init__.py") its file runs when imported:
    itself, what it imports directly or not, and the packages' `__init__.py` on the way."""
    root = staged.resolve()
    files: dict[Path, set[Path]] = {}

    def imports(path: Path) -> set[Path]:
        if path not in files:
            try:
                files[path] = imported(path, root)
            except (OSError, SyntaxError, ValueError, RecursionError):
                files[path] = set()
        return files[path]
    found = {}
    for c in components:
        start = root / c.assignment / c.file
        todo, seen = [start, start.parent / "__init__.py"], set[Path]()
        while todo and len(seen) < _FILES:
            path = todo.pop()
            if path in seen or not path.is_file() or not path.is_relative_to(root):
                continue
            seen.add(path)
            todo += imports(path)
        found[c.name] = {p.relative_to(root).as_posix() for p in seen}
    return found


def _files(staged: Path) -> list[str]:
    """Every Python file of the staged submission (links left out: staging copies none)."""
    root = staged.resolve()
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if p.is_file() and not p.is_symlink())
    return found[:_FILES]


def _charged(components: list[Component], f: Finding, hit: bool, reached: dict[str, set[str]],
             check: str | None) -> list[Component]:
    """Who pays for `f`: its file's components (_owners); where none takes it, those that reach it
    (from the source) or the one whose check ran it (executed)."""
    owners = _owners(components, f, hit)
    if owners:
        return owners
    wants = [c for c in components if f.what in c.forbidden] if hit else components
    if f.how == "executed" and check is not None:
        return [c for c in wants if check in {chk.id for chk in c.checks}]
    return [c for c in wants if f"{c.assignment}/{c.file}" != f.file and f.file in reached.get(c.name, set())]


def judge(assignment: Assignment, staged: Path,
          calls: Sequence[tuple[object, str]] = ()) -> dict[str, tuple[list[Sighting], list[Sighting]]]:
    """Component name -> (hits, flags), for the components that have either. `calls`: the worker's record
    of what ran (grader.suite.remote.Submission.executed), each entry with the check that ran it."""
    components = list(assignment.components)
    # a course without forbidden APIs still gets the flags: they guard more than the APIs (the placement
    # watch, the stand-ins, the recorder), so a course that forbids nothing holds them all the same
    apis = {api for c in components for api in c.forbidden}
    hits = executed([entry for entry, _ in calls], apis, [check for _, check in calls])
    flags: list[tuple[Finding, str | None]] = []
    for rel in _files(staged):
        file_hits, file_flags = scan(staged, rel, apis, frozenset(c.name for c in components))
        hits += [(f, None) for f in file_hits]
        flags += [(f, None) for f in file_flags]
    reached = reach(staged, components)
    verdict: dict[str, tuple[list[Sighting], list[Sighting]]] = {}
    for found, is_hit in ((hits, True), (flags, False)):
        for f, check in found:
            for c in _charged(components, f, is_hit, reached, check):
                listed = verdict.setdefault(c.name, ([], []))[0 if is_hit else 1]
                if f.sighting() not in listed and len(listed) < _LIMIT:
                    listed.append(f.sighting())
    return verdict
