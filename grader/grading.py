"""Grade one submission for one assignment: stage it, run the suites, attribute failures, score."""

import io
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from grader.course import ConfigError, Course
from grader.results import Outcome, Report
from grader.sandbox.host import Sandbox

# plugins a grading run has no use for; unraisableexception alone costs ~0.6 s of gc at exit
_NO_PLUGINS = ("cacheprovider", "randomly", "unraisableexception", "threadexception", "faulthandler", "doctest",
               "pastebin", "junitxml", "nose")


def suite_files(course: Course, assignment: str) -> dict[str, Path]:
    files = {tier: course.suites / tier / f"test_{assignment}.py" for tier in ("public", "hidden")}
    return {tier: path for tier, path in files.items() if path.exists()}


def start_sandbox(*, course: Course, assignment: str, submission: Path) -> Sandbox:
    """Stage the submission and start its worker. Cheap and torch-free: call it first, so the
    worker imports torch while this process imports pytest, Hypothesis and torch."""
    course.assignment(assignment)
    submission = Path(submission).resolve()
    if not submission.is_dir():
        raise ConfigError(f"submission directory {str(submission)!r} does not exist")
    if "public" not in suite_files(course, assignment):
        raise ConfigError(f"no grading suite for {assignment}: {course.suites / 'public'} has no "
                          f"test_{assignment}.py")
    staged = {a.name: list(a.files) for a in course.closure(assignment)}
    sandbox = Sandbox(submission, staged, course.limits)
    sandbox.start()
    return sandbox


def grade_submission(*, course: Course, assignment: str, submission: Path, device: str = "cpu",
                     sandbox: Sandbox | None = None) -> Report:
    """Run the suites of `assignment` on `submission` and score them.

    The checks of a composite whose parts fail are re-run with the reference's versions of
    those parts swapped in, and that run decides (grader.attribution). `sandbox`: one started
    by start_sandbox for the same submission (closed here)."""
    from grader import attribution, forbidden, scoring
    from grader.suite.remote import Submission

    sandbox = sandbox or start_sandbox(course=course, assignment=assignment, submission=submission)
    spec = course.assignment(assignment)
    submission = Path(submission).resolve()
    tiers = suite_files(course, assignment)
    has_reference = "hidden" in tiers  # the instructors' tier: the reference tree is there too
    try:
        student = Submission(sandbox, device, course.reference if has_reference else None)
        student.forbidden = sorted({api for comp in spec.components for api in comp.forbidden})

        def run(checks: dict[str, tuple[str, ...]]) -> dict[str, Outcome]:
            return run_checks(course, student, checks)

        results = run({chk.id: () for comp in spec.components for chk in comp.checks})
        blame = attribution.attribute(course, spec, results, run, swap=has_reference)
        faults, refused = sandbox.faults, sandbox.staged.refused
        # the staged copy is what ran: scanned before the sandbox and its folder go
        verdict = forbidden.judge(spec, sandbox.dir / "submission", student.executed)
    finally:
        sandbox.close()
    unavailable: dict[str, Outcome | None] = {}
    cuda = device == "cuda" and _cuda_available()
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
    return report


def run_checks(course: Course, student, checks: dict[str, tuple[str, ...]]) -> dict[str, Outcome]:
    """One pytest run over the suites that hold `checks` (id -> parts to swap in first)."""
    if not checks:
        return {}
    import pytest

    from grader.suite.plugin import GradingPlugin

    owners = {chk.id: a.name for a in course.assignments.values() for comp in a.components for chk in comp.checks}
    files = sorted({str(path) for check in checks for path in suite_files(course, owners[check]).values()})
    plugin = GradingPlugin(course, student, checks)
    args = [*files, *(x for name in _NO_PLUGINS for x in ("-p", f"no:{name}"))]
    # the suites report through grader.suite.checks, not bare asserts: no rewriting to pay for
    args += ["-q", "--assert=plain", "--rootdir", str(course.root), "-c", str(course.path),
             "-o", "python_files=test_*.py", "-W", "ignore"]
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
        code = pytest.main(args, plugins=[plugin])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the grading suites did not run (pytest exit {code})\n"
                           f"{(out.getvalue() + err.getvalue())[-3000:]}")
    return dict(plugin.results)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
