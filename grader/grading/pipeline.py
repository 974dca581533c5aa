"""Grade one submission for one assignment: stage it, run the suites, attribute failures, score."""

import gc
import io
import itertools
import time
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING

from grader.course import ConfigError, Course
from grader.results import Outcome, Report
from grader.sandbox import isolation
from grader.sandbox.host import Sandbox
from grader.sandbox.template import Template

if TYPE_CHECKING:
    from grader.grading.reuse import Reuse
    from grader.grading.split import Helper

# plugins a grading run has no use for; unraisableexception alone costs ~0.6 s of gc at exit
_NO_PLUGINS = ("cacheprovider", "randomly", "unraisableexception", "threadexception", "faulthandler", "doctest",
               "pastebin", "junitxml", "nose", "logging")


def suite_files(course: Course, assignment: str, tiers=("public", "hidden")) -> dict[str, Path]:
    """The suites of `assignment` that exist, by tier ("public", "hidden", "cuda")."""
    files = {tier: course.suites / tier / f"test_{assignment}.py" for tier in tiers}
    return {tier: path for tier, path in files.items() if path.exists()}


def start_sandbox(*, course: Course, assignment: str, submission: Path, device: str = "cpu",
                  template: Template | None = None) -> Sandbox:
    """Stage the submission and start its worker. Cheap and torch-free for the CPU: call it first,
    so the worker imports torch while this process imports pytest, Hypothesis and torch. `device`:
    as given to grade_submission; "cuda", where this process sees a CUDA device, trades the
    worker's address-space limit, which CUDA cannot run under, for a data limit of the same size.
    `template`: a started grader.sandbox.template.Template to fork the worker from."""
    course.assignment(assignment)
    submission = Path(submission).resolve()
    if not submission.is_dir():
        raise ConfigError(f"submission directory {str(submission)!r} does not exist")
    if "public" not in suite_files(course, assignment):
        raise ConfigError(f"no grading suite for {assignment}: {course.suites / 'public'} has no "
                          f"test_{assignment}.py")
    staged = {a.name: list(a.files) for a in course.closure(assignment)}
    sandbox = Sandbox(submission, staged, course.limits, template=template, gpu=_gpu(device) is not None)
    sandbox.start()
    return sandbox


def grade_submission(*, course: Course, assignment: str, submission: Path, device: str = "cpu",
                     sandbox: Sandbox | None = None, template: Template | None = None,
                     helper: "Helper | None" = None, cost: dict[str, float] | None = None,
                     reuse: "Reuse | None" = None, only: frozenset[str] | None = None) -> Report:
    """Run the suites of `assignment` on `submission` and score them.

    The checks of a composite whose parts fail are re-run with the reference's versions of
    those parts swapped in, and that run decides (grader.judging.attribution). Every check runs on the
    CPU; with `device` "cuda" the GPU tier runs too, where this process sees a CUDA device (the
    submission's process is not asked), and is reported skipped elsewhere. `sandbox`: one
    started by start_sandbox for the same submission (closed here); `template`: as for start_sandbox;
    `helper`: a grader.grading.split.Helper, which runs the checks of the later components meanwhile once it
    is ready, chosen by `cost` (seconds by check, from earlier gradings); `reuse`: a grader.grading.reuse.Reuse
    that keeps what each component's checks gave, and runs them again only when their files change;
    `only`: check ids of the assignment to run alone, the report listing only them (grader.grading.only)."""
    sandbox = sandbox or start_sandbox(course=course, assignment=assignment, submission=submission, device=device,
                                       template=template)
    with one_intra_op_thread(), frozen_heap():
        return _grade(course, assignment, submission, device, sandbox, helper, cost or {}, reuse, only)


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


def _grade(course: Course, assignment: str, submission: Path, device: str, sandbox: Sandbox,
           helper: "Helper | None", cost: dict[str, float], reuse: "Reuse | None",
           only: frozenset[str] | None = None) -> Report:
    from grader.grading import performance, split
    from grader.judging import attribution, diagnosis, forbidden, scoring, telling
    from grader.suite.remote import Submission

    spec = course.assignment(assignment)
    if only:  # the components of those checks, with only those checks (grader.grading.only)
        from grader.grading.only import narrow, note

        spec = narrow(spec, only)
    submission = Path(submission).resolve()
    tiers = suite_files(course, assignment)
    has_reference = "hidden" in tiers  # the instructors' tier: the reference tree is there too
    gpu = _gpu(device)
    try:
        student = Submission(sandbox, gpu, course.reference if has_reference else None)
        student.forbidden = sorted({api for comp in spec.components for api in comp.forbidden})

        def run(checks: dict[str, tuple[str, ...]], **how) -> dict[str, Outcome]:
            return run_checks(course, student, checks, **how)

        # a composite's failure that its parts' reference versions excuse is not shown: with those at
        # hand (the instructors' tier) its example is shrunk only where it is shown, once blame is known
        later = frozenset(chk.id for comp in spec.components if comp.depends for chk in comp.checks
                          if chk.id not in comp.isolated) if has_reference else frozenset()
        checks = {chk.id: () for comp in spec.components for chk in comp.checks if chk.tier != "cuda" or gpu}
        context, staged = (assignment, device, has_reference, str(submission), only), sandbox.dir / "submission"
        kept = reuse.recall(course, spec, staged, context) if reuse is not None else {}
        reused = {chk.id for comp in spec.components if comp.name in kept for chk in comp.checks}
        results = split.run({c: p for c, p in checks.items() if c not in reused}, run, spec, student, later, helper,
                             cost, assignment=assignment, submission=submission, device=device, gpu=gpu)
        if reuse is not None:
            reuse.keep(course, spec, staged, context, student, {c.name for c in spec.components} - set(kept), results)
            reuse.restore(student, results, kept)
        upstream: list[str] = []  # parts of earlier assignments that fail their own checks
        blame = attribution.attribute(course, spec, results, run, swap=has_reference, upstream=upstream)
        results.update(_shrink_shown(results, blame, run))
        # --only: no timings (they are not what was asked for, and cost a second or more)
        speed = performance.measure(course, spec, student, results, gpu, has_reference) if not only else None
        faults, refused = sandbox.faults, sandbox.staged.refused
        # the staged copy is what ran: scanned before the sandbox and its folder go
        verdict = forbidden.judge(spec, sandbox.dir / "submission", student.executed, student.executed_in)
    finally:
        sandbox.close()
    unavailable: dict[str, Outcome | None] = {}
    cuda = gpu is not None
    for component in spec.components:
        for check in component.checks:
            if check.tier == "hidden" and not has_reference:
                unavailable[check.id] = Outcome("skipped", "unavailable", "hidden tier: graded by your instructor")
            elif check.tier == "cuda" and device != "cuda":
                unavailable[check.id] = None
            elif check.tier == "cuda" and not cuda:
                unavailable[check.id] = Outcome("skipped", "no_cuda", "no CUDA device here: GPU check not run")
    report = scoring.score(course, spec, submission, results, unavailable, blame,
                           duration=time.monotonic() - sandbox.created, faults=[f.detail for f in faults],
                           refused=refused, forbidden=verdict)
    report.isolation = sandbox.isolation
    report.isolation_detail = isolation.describe(sandbox.isolation)
    report.performance = speed
    # a check that waits on a failing part (no reference here) says nothing of its own component either
    excused = frozenset(t.id for c in report.components for t in c.checks
                        if t.excused_by or getattr(t, "waiting_on", ()))
    # a bug is named from all of a component's public checks: with --only some did not run
    named = diagnosis.diagnose(course, spec, results, excused, upstream=frozenset(upstream)) if not only else {}
    table = diagnosis.load(course)
    for comp in report.components:
        comp.diagnosis = named.get(comp.name)
        comp.telling = getattr(telling.most_telling(comp, table), "id", None)
    if not has_reference:  # the student's copy starts at the earliest failing part, whatever its assignment
        components = {c.name: c for a in course.assignments.values() for c in a.components}
        report.upstream = [{"name": n, "file": f"{components[n].assignment}/{components[n].file}"} for n in upstream]
    if only:
        report.notes.append(note(only, course.assignment(assignment)))
    if device == "cuda":
        report.gpu = _gpu_summary(spec, results, gpu)
        report.notes.append(report.gpu["note"])
    return report


def _shrink_shown(results: dict[str, Outcome], blame: dict, run) -> dict[str, Outcome]:
    """The unshrunk failures that the report shows (not excused), run again with shrinking: the
    same draws fail the same way (derandomized), and the example becomes the minimal one. The
    first run's status stands: a run that disagrees changes nothing."""
    excused = {check for check, b in blame.items() if b.on_reference is not None and b.on_reference.status == "passed"}
    shown = [check for check, outcome in results.items() if outcome.unshrunk and check not in excused]
    again = run(dict.fromkeys(shown, ())) if shown else {}
    return {check: outcome for check, outcome in again.items()
            if (outcome.status, outcome.reason) == (results[check].status, results[check].reason)}


def run_checks(course: Course, student, checks: dict[str, tuple[str, ...]], *, quick: frozenset[str] = frozenset(),
               one_failure: bool = False) -> dict[str, Outcome]:
    """One pytest run over the suites that hold `checks` (id -> parts to swap in first); `quick` and
    `one_failure`: as for grader.suite.plugin.GradingPlugin."""
    if not checks:
        return {}
    import pytest

    from grader.suite.plugin import GradingPlugin

    owners = {chk.id: (a.name, chk.tier) for a in course.assignments.values() for comp in a.components
              for chk in comp.checks}
    # the public and hidden suites of each check's assignment, and the GPU tier's where a check is in it
    wanted = {owners[check] for check in checks}
    files = sorted({str(path) for name, tier in wanted
                    for path in suite_files(course, name, ("public", "hidden", tier)).values()})
    plugin = GradingPlugin(course, student, checks, quick=quick, one_failure=one_failure)
    args = [*files, *(x for name in _NO_PLUGINS for x in ("-p", f"no:{name}"))]
    # the suites report through grader.suite.checks, not bare asserts: no rewriting to pay for
    args += ["-q", "--assert=plain", "--rootdir", str(course.root), "-c", str(course.path),
             "-o", "python_files=test_*.py", "-W", "ignore", "--tb=no"]
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
        code = pytest.main(args, plugins=[plugin])
    if plugin.interrupted:  # pytest catches Ctrl-C and returns (INTERRUPTED, also its code for a suite
        raise KeyboardInterrupt  # it cannot collect): the grade is unfinished
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the grading suites did not run (pytest exit {code})\n"
                           f"{(out.getvalue() + err.getvalue())[-3000:]}")
    return dict(plugin.results)


def _gpu(device: str) -> str | None:
    """The device the GPU tier runs on: "cuda" when asked for and this process sees a CUDA device.
    Decided here, never by the submission's process (which may hide or fake one)."""
    if device != "cuda":
        return None
    import torch

    return "cuda" if torch.cuda.is_available() and torch.cuda.device_count() > 0 else None


def _gpu_summary(spec, results: dict[str, Outcome], gpu: str | None) -> dict:
    """What the JSON's `gpu` says of the GPU tier, with the report's note."""
    ids = [chk.id for comp in spec.components for chk in comp.checks if chk.tier == "cuda"]
    if gpu is None:
        return {"available": False, "device": "", "checks": len(ids), "seconds": 0.0,
                "note": f"GPU checks skipped ({len(ids)}): no CUDA device here; not run and not counted."}
    import torch

    name = torch.cuda.get_device_name(torch.device(gpu)) if gpu.startswith("cuda") else gpu
    seconds = round(sum(results[i].duration for i in ids if i in results), 2)
    passed = sum(results[i].status == "passed" for i in ids if i in results)
    return {"available": True, "device": name, "checks": len(ids), "seconds": seconds,
            "note": f"GPU checks on {name}: {passed} of {len(ids)} passed, in {seconds:g} s."}
