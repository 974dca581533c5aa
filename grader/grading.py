"""Grade one submission for one assignment: stage it, run the suites, score the results."""

import io
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from grader.course import ConfigError, Course
from grader.results import Report
from grader.sandbox.host import Sandbox


def suite_files(course: Course, assignment: str) -> dict[str, Path]:
    files = {tier: course.suites / tier / f"test_{assignment}.py" for tier in ("public", "hidden")}
    return {tier: path for tier, path in files.items() if path.exists()}


def start_sandbox(*, course: Course, assignment: str, submission: Path) -> Sandbox:
    """Stage the submission and start its worker. Cheap and torch-free: call it first, so the
    worker imports torch while this process imports pytest, Hypothesis and torch."""
    assignment_name = assignment
    course.assignment(assignment_name)
    submission = Path(submission).resolve()
    if not submission.is_dir():
        raise ConfigError(f"submission directory {str(submission)!r} does not exist")
    files = suite_files(course, assignment_name)
    if "public" not in files:
        raise ConfigError(f"no grading suite for {assignment_name}: {course.suites / 'public'} has no "
                          f"test_{assignment_name}.py")
    staged = {a.name: list(a.files) for a in course.closure(assignment_name)}
    sandbox = Sandbox(submission, staged, course.limits)
    sandbox.start()
    return sandbox


def grade_submission(*, course: Course, assignment: str, submission: Path, device: str = "cpu",
                     sandbox: Sandbox | None = None) -> Report:
    """Run the suites of `assignment` on `submission` and score them.

    `sandbox`: one started by start_sandbox for the same submission (it is closed here)."""
    import pytest

    from grader import scoring
    from grader.results import Outcome
    from grader.suite.plugin import GradingPlugin
    from grader.suite.remote import Submission

    assignment_name = assignment
    sandbox = sandbox or start_sandbox(course=course, assignment=assignment_name, submission=submission)
    spec = course.assignment(assignment_name)
    submission = Path(submission).resolve()
    files = suite_files(course, assignment_name)
    try:
        reference = course.reference if "hidden" in files else None  # the instructors' tier only
        plugin = GradingPlugin(course, spec, Submission(sandbox, device, reference))
        args = [str(p) for p in files.values()]
        # plugins a grading run has no use for; unraisableexception alone costs ~0.6 s of gc at exit
        for name in ("cacheprovider", "randomly", "unraisableexception", "threadexception", "faulthandler",
                     "doctest", "pastebin", "junitxml", "nose"):
            args += ["-p", f"no:{name}"]
        # the suites report through grader.checks, not bare asserts: no rewriting to pay for
        args += ["-q", "--assert=plain", "--rootdir", str(course.root),
                 "-c", str(course.path), "-o", "python_files=test_*.py", "-W", "ignore"]
        with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
            code = pytest.main(args, plugins=[plugin])
        if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            raise RuntimeError(f"the grading suite for {assignment_name} did not run (pytest exit {code})\n"
                               f"{(out.getvalue() + err.getvalue())[-3000:]}")
        results = dict(plugin.results)
        faults, restarts, refused = sandbox.faults, sandbox.restarts, sandbox.staged.refused
    finally:
        sandbox.close()
    cuda = device == "cuda" and _cuda_available()
    unavailable = {}
    for component in spec.components:
        for check in component.checks:
            if check.tier == "hidden" and "hidden" not in files:
                unavailable[check.id] = Outcome("skipped", "unavailable", "hidden tier: graded by your instructor")
            elif check.tier == "cuda" and device != "cuda":
                unavailable[check.id] = None
            elif check.tier == "cuda" and not cuda:
                unavailable[check.id] = Outcome("skipped", "no_cuda", "no CUDA device here: GPU check not run")
    return scoring.score(course, spec, submission, results, unavailable,
                         duration=time.monotonic() - sandbox.created, faults=[f.detail for f in faults], refused=refused)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
