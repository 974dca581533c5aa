"""The grading suites: where they are, one pytest run over them, and what a grading process sets up around it."""

import atexit
import gc
import io
import itertools
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

from grader.course import Course
from grader.results import Outcome, Reach, Tier

# plugins a grading run has no use for; unraisableexception alone costs ~0.6 s of gc at exit
_NO_PLUGINS = ("cacheprovider", "randomly", "unraisableexception", "threadexception", "faulthandler", "doctest",
               "pastebin", "junitxml", "nose", "logging")


def suite_files(course: Course, assignment: str,
                tiers: tuple[Tier, ...] = (Tier.PUBLIC, Tier.HIDDEN)) -> dict[Tier, Path]:
    """The suites of `assignment` that exist, by tier."""
    files = {tier: course.suites / tier / f"test_{assignment}.py" for tier in tiers}
    return {tier: path for tier, path in files.items() if path.exists()}


_gradings = itertools.count(1)


@contextmanager
def frozen_heap(full_every: int = 8):
    """The objects alive before a grading (the imports of pytest, Hypothesis and torch; in a warm grader,
    the suites and the reference) are left out of the garbage collector's passes during it: a full pass
    over them took about 0.15 s, several times per grading. The grading's own cyclic garbage is collected
    at its end; what became garbage among the older objects, every `full_every` gradings, so that a warm
    grader grading back to back does not grow."""
    gc.freeze()
    try:
        yield
    finally:
        gc.collect()
        gc.unfreeze()
        if next(_gradings) % full_every == 0:
            gc.collect()


@contextmanager
def one_intra_op_thread():
    """The checks' tensors are tiny: a second intra-op thread only spins, and on a busy machine
    (a class graded on every core, CI) it waits for a core, which doubled a grade's time."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# what pytest reads from the environment of whoever runs `grade` (their own test runs' options and
# plugins, set in a shell or a CI's settings): the grading suites run as the course says, whatever is set
_PYTEST_VARIABLES = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")


# Hypothesis's pytest plugin, at the report of each check that failed, imports its writer of patches
# (source edits adding the failing example), which needs libcst: where that is missing the import fails
# and is tried again, module and all, at every failing check; under a pytest that rewrites Hypothesis's
# asserts (the kit's own tests) each try took 30 ms, and a grading of assignment3 with two bugs made 50. Where
# libcst is there, it would parse the suite's source for each. A grading shows its failures itself and writes
# no patch.
_PATCH_WRITER = "hypothesis.extra._patching"


@contextmanager
def _no_patch_writer():
    kept = sys.modules.get(_PATCH_WRITER)
    sys.modules[_PATCH_WRITER] = None  # type: ignore[assignment]  # the import raises ImportError at once
    try:
        yield
    finally:
        if kept is None:
            sys.modules.pop(_PATCH_WRITER, None)
        else:
            sys.modules[_PATCH_WRITER] = kept


@contextmanager
def _no_pytest_settings():
    kept = {name: os.environ.pop(name) for name in _PYTEST_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(kept)


def pytest_run(course: Course, student, checks: dict[str, tuple[str, ...]], *, quick: frozenset[str] = frozenset(),
               one_failure: bool = False, reach: Reach = Reach.SWAPPED) -> dict[str, Outcome]:
    """One pytest run over the suites that hold `checks` (id -> parts to swap in first, reached as `reach`
    says); `quick`, `one_failure` and `reach`: as for grader.suite.plugin.GradingPlugin."""
    if not checks:
        return {}
    import pytest

    from grader.suite.plugin import GradingPlugin

    owners = {chk.id: (a.name, chk.tier) for a in course.assignments.values() for comp in a.components
              for chk in comp.checks}
    # the public and hidden suites of each check's assignment, and the GPU tier's where a check is in it
    wanted = {owners[check] for check in checks}
    files = sorted({str(path) for name, tier in wanted
                    for path in suite_files(course, name, (Tier.PUBLIC, Tier.HIDDEN, tier)).values()})
    plugin = GradingPlugin(course, student, checks, quick=quick, one_failure=one_failure, reach=reach)
    args = [*files, *(x for name in _NO_PLUGINS for x in ("-p", f"no:{name}"))]
    # the suites report through grader.suite.checks, not bare asserts: no rewriting to pay for
    args += ["-q", "--assert=plain", "--rootdir", str(course.root), "-c", str(course.path),
             "-o", "python_files=test_*.py", "-W", "ignore", "--tb=no"]
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err, _no_pytest_settings(), \
            _no_patch_writer():
        code = pytest.main(args, plugins=[plugin])
    if plugin.interrupted:  # pytest catches Ctrl-C and returns (INTERRUPTED, also its code for a suite
        raise KeyboardInterrupt  # it cannot collect): the grade is unfinished
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the grading suites did not run (pytest exit {code})\n"
                           f"{(out.getvalue() + err.getvalue())[-3000:]}")
    return dict(plugin.results)


def keep_hypothesis_out_of_cwd() -> str | None:
    """Point Hypothesis's storage at a scratch folder removed at exit, unless the user chose one.

    Hypothesis keeps caches under `./.hypothesis` of the current directory, created on first
    use (hypothesis.configuration.storage_directory): grading has its example database off,
    but Hypothesis still caches the constants it collects from local source files there
    (`.hypothesis/constants/`). Grading must leave the folder it runs in as it was. The
    variable is read lazily, so setting it before Hypothesis first stores anything is enough;
    the submission's process never sees it (it gets a clean environment). Returns the folder
    made, if any."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return None
    home = tempfile.mkdtemp(prefix="grade-hypothesis-")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = home
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home
