"""The tiers of the kit's own tests: a test's tier is the directory it lives in, checked against what it uses
(tests/kit/conftest.py applies both).

Each test module is in the directory of its tier: tests/kit/unit/, sandbox/, container/, browser/ or kernel/
(TIERS says what each tier's tests start), and its tests carry that tier's marker, so that
`python -m pytest tests/kit/unit` and `python -m pytest -m unit` run the same tests. The directory is checked
against what the test reaches: its code and the code of the fixtures and test helpers it reaches (the
functions of tests/ that it calls, through closures, classes and modules, transitively); a helper that
names `subprocess`, the kit's sandbox or warm grader, a grading entry point of the grader, Docker, Chromium
or a Jupyter kernel reaches that tier. unit/ allows none of them, sandbox/ the sandbox tier, and container/,
browser/ and kernel/ their own tier and the sandbox's (`ALLOWED`): a test that reaches more, a test module
outside the tier directories, or a tier marker written on a test is a collection error that names the
test and the directory it belongs in (`misplaced`). A test that starts a process out of sight (a grader
function that grades in a sandbox, say) is put in its tier's directory all the same; `guard` makes sure
a unit test really starts nothing (the conftest's autouse fixture `_unit_tier_guard`).
"""
from __future__ import annotations

import dis
import functools
import inspect
import os
import sys
import threading
import types
from collections.abc import Iterable
from pathlib import Path

TIERS = {
    "unit": "starts no process of any kind: no sandbox, subprocess, Docker, Chromium or kernel",
    "sandbox": "grades in the kit's sandbox or starts a subprocess (python -m grader, a worker, a venv)",
    "container": "runs Docker (Gradescope's container)",
    "browser": "runs headless Chromium",
    "kernel": "runs a Jupyter kernel (nbclient, nbgrader)",
}
HEAVY = ("sandbox", "container", "browser", "kernel")
KIT = Path(__file__).resolve().parent
# the heavy tiers that a test of each tier's directory may reach
ALLOWED = {"unit": frozenset(), "sandbox": frozenset({"sandbox"}), "container": frozenset({"container", "sandbox"}),
           "browser": frozenset({"browser", "sandbox"}), "kernel": frozenset({"kernel", "sandbox"})}

# modules (and what they hold) that start processes: a test that reaches one is in that tier
MODULES = {
    "subprocess": "sandbox", "multiprocessing": "sandbox", "concurrent.futures.process": "sandbox",
    "pty": "sandbox", "asyncio.subprocess": "sandbox",
    # the grader's parts that grade in a sandbox or start a process
    "grader.sandbox": "sandbox", "grader.grading.warm": "sandbox", "grader.grading.split": "sandbox",
    "grader.grading.pipeline": "sandbox", "grader.cli": "sandbox", "grader.commands": "sandbox",
    "grader.interactive.watch": "sandbox", "grader.interactive.notebook": "sandbox",
    "grader.batch.run": "sandbox", "grader.batch.pool": "sandbox", "grader.batch.cluster": "sandbox",
    "grader.batch.worker": "sandbox", "grader.training": "sandbox", "grader.interactive.repro": "sandbox",
    "tests.kit.docker": "container",
    "nbclient": "kernel", "jupyter_client": "kernel", "nbgrader": "kernel",
    "dask.distributed": "sandbox", "distributed": "sandbox",
}
# programs a helper runs by name (`shutil.which("chromium")`, ["docker", ...])
PROGRAMS = {"chromium": "browser", "docker": "container", "jupyter": "kernel", "dockerd": "container"}
# fixtures of the kit's own machinery, not of a test's (the guard itself names what it forbids)
INFRASTRUCTURE = {"_unit_tier_guard", "report_cache"}


@functools.cache  # asked for about 1.4 million times in one collection of the kit, of a few thousand names
def _module_tier(name: str) -> str:
    for prefix, tier in MODULES.items():
        if name == prefix or name.startswith(prefix + "."):
            return tier
    return ""


def _ours(obj) -> bool:
    """A function, class or module of the tests themselves (whose code is read in turn)."""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return name == "tests" or name.startswith("tests.")


def _unwrap(func):
    inner = getattr(getattr(func, "hypothesis", None), "inner_test", None)  # @given
    func = inner or func
    try:
        return inspect.unwrap(func)
    except ValueError:
        return func


class Reader:
    """Tiers of the objects that tests reach, remembered per object (a run reads each helper once)."""

    def __init__(self):
        self._seen: dict[int, set[str]] = {}

    def of(self, obj, owner: type | None = None) -> set[str]:
        """The heavy tiers that `obj` (a function, class, module or value) reaches."""
        if isinstance(obj, types.ModuleType):
            return {_module_tier(obj.__name__)} - {""}
        module = getattr(obj, "__module__", None)
        if isinstance(module, str) and not _ours(obj) and (isinstance(obj, type) or callable(obj)):
            return {_module_tier(module)} - {""}
        if not _ours(obj):
            return set()
        key = id(obj)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = set()  # a recursive helper: what it reaches is being read
        tiers: set[str] = set()
        if isinstance(obj, type):
            for value in vars(obj).values():
                tiers |= self.of(getattr(value, "__func__", value), owner=obj)
        elif callable(obj):
            func = _unwrap(obj)
            code = getattr(func, "__code__", None)
            if code is not None:
                tiers = self._code(code, getattr(func, "__globals__", {}), owner)
        self._seen[key] = tiers
        return tiers

    def _code(self, code: types.CodeType, scope: dict, owner: type | None) -> set[str]:
        tiers: set[str] = set()
        modules: list[types.ModuleType] = []
        attributes: list[str] = []
        imported: list[str] = []
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in scope:
                value = scope[ins.argval]
                tiers |= self.of(value)
                if isinstance(value, types.ModuleType):
                    modules.append(value)
            elif ins.opname == "IMPORT_NAME":
                tiers |= {_module_tier(ins.argval)} - {""}
                imported.append(ins.argval)  # `from grader.batch import run`: grader.batch.run, imported yet or not
                module = sys.modules.get(ins.argval)
                if module is not None:
                    modules.append(module)
            elif ins.opname in ("IMPORT_FROM", "LOAD_ATTR", "LOAD_METHOD"):
                attributes.append(ins.argval)
        # each name and holder once: a test's code names the same few attributes and modules many times
        holders = list({id(h): h for h in [*modules, *([owner] if owner else [])]}.values())
        for name in dict.fromkeys(attributes):
            tiers |= {_module_tier(f"{module}.{name}") for module in dict.fromkeys(imported)} - {""}
            for holder in holders:
                if isinstance(holder, types.ModuleType) and not _ours(holder):
                    tiers |= {_module_tier(f"{holder.__name__}.{name}")} - {""}
                if hasattr(holder, name) and (_ours(holder) or isinstance(holder, type)):
                    tiers |= self.of(getattr(holder, name))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                tiers |= self._code(const, scope, owner)
            elif isinstance(const, str) and const in PROGRAMS:
                tiers.add(PROGRAMS[const])
        return tiers


def reached(item, reader: Reader) -> set[str]:
    """The heavy tiers that a collected test reaches: what its code and its fixtures' code reach."""
    tiers: set[str] = set()
    function = getattr(item, "function", None)
    if function is not None:
        tiers |= reader.of(function, owner=getattr(item, "cls", None))
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        if name in INFRASTRUCTURE or info is None:
            continue
        for fixturedef in info.name2fixturedefs.get(name, ())[-1:]:
            tiers |= reader.of(fixturedef.func)
    return tiers


def directory(path: Path) -> str | None:
    """The tier whose directory holds the test module at `path` (None: a module outside tests/kit/'s tier
    directories)."""
    try:
        parts = Path(path).resolve().relative_to(KIT).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def belongs(tiers: set[str]) -> str:
    """The directory of a test that reaches `tiers`: the heaviest of them (container > browser > kernel >
    sandbox), unit for none."""
    return next((t for t in ("container", "browser", "kernel", "sandbox") if t in tiers), "unit")


def misplaced(test: str, where: str | None, tiers: set[str]) -> str | None:
    """What is wrong with the test `test` (a node id) in the tier directory `where` (None: outside them),
    reaching `tiers`; None where nothing is."""
    home = f"tests/kit/{belongs(tiers)}/"
    if where is None:
        return (f"{test}: a test module of the kit lives in the directory of its tier (tests/kit/unit/, sandbox/, "
                f"container/, browser/ or kernel/: tests/kit/tiering.py); by what it reaches it belongs in {home}")
    if not tiers <= ALLOWED[where]:
        reach = ", ".join(f"{t} ({TIERS[t]})" for t in sorted(tiers - ALLOWED[where]))
        return (f"{test} reaches the tier {reach}, which tests/kit/{where}/ does not allow: it belongs in {home}, "
                f"or keep it from reaching that (tests/kit/tiering.py)")
    return None


def markers(where: str, tiers: set[str]) -> set[str]:
    """The tier markers of a test in `where` that reaches `tiers` (allowed there): its directory's tier and
    the tiers it reaches (a test of container/ that runs `grade` too is also `sandbox`)."""
    return {where} | (tiers & ALLOWED[where])


class StartedAProcess(AssertionError):
    pass


def _refuse(what: str, original, thread: threading.Thread):
    def refused(*args, **kwargs):
        if threading.current_thread() is not thread:  # a process the run's own machinery starts
            return original(*args, **kwargs)
        raise StartedAProcess(
            f"a test of the unit tier started {what}: move it to the directory of the tier it needs "
            f"(tests/kit/{'/, tests/kit/'.join(HEAVY)}/), or keep it from starting one (tests/kit/tiering.py)")
    return refused


def guard(monkeypatch) -> None:
    """Every way a test starts a process, refused on the test's own thread: subprocess (and what runs on
    it: Docker, Chromium, a Jupyter kernel, asyncio's subprocesses), fork, spawn, os.system,
    multiprocessing, and the kit's Sandbox (whose worker may come from a template already running)."""
    import multiprocessing.util
    import subprocess

    thread = threading.current_thread()
    targets: Iterable[tuple[object, str, str]] = [
        (subprocess.Popen, "_execute_child", "a subprocess"),
        (os, "fork", "a fork"), (os, "forkpty", "a fork"), (os, "posix_spawn", "a process"),
        (os, "posix_spawnp", "a process"), (os, "system", "a shell"),
        (multiprocessing.util, "spawnv_passfds", "a multiprocessing process"),
    ]
    for holder, name, what in targets:
        if hasattr(holder, name):
            monkeypatch.setattr(holder, name, _refuse(what, getattr(holder, name), thread))
    from grader.sandbox import host

    monkeypatch.setattr(host.Sandbox, "__init__", _refuse("the kit's Sandbox", host.Sandbox.__init__, thread))
