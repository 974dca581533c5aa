"""The pytest plugin that runs grading suites: fixtures for tests, results for the scorer.

pytest and Hypothesis run here, in the grader's process; the submission runs in the
sandbox. What a check earns is decided from what this plugin records, never from
anything the submission says about itself.
"""

import hypothesis
import pytest

from grader.suite.checks import Mismatch
from grader.course import Assignment, Course
from grader.results import Outcome
from grader.suite.remote import Submission
from grader.sandbox.host import StudentError, WorkerFault


def classify(exc: BaseException) -> Outcome:
    """Map what a check raised to a status, from the grader's own exception types only."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, Mismatch):
        return Outcome("failed", "mismatch", exc.what, exc.details())
    if isinstance(exc, StudentError):
        details = {"where": "\n".join(exc.where)} if exc.where else {}
        if exc.not_attempted:
            return Outcome("error", "not_attempted", f"not attempted ({exc.type}: {exc.message})", details)
        return Outcome("error", "exception", f"your code raised {exc.type}: {exc.message}", details)
    if isinstance(exc, WorkerFault):
        return Outcome("timeout" if exc.kind == "timeout" else "error", exc.kind, exc.detail)
    if isinstance(exc, AssertionError):
        return Outcome("failed", "mismatch", str(exc) or "assertion failed")
    return Outcome("error", "grader", f"the check could not use what the code returned ({type(exc).__name__}: {exc})")


def _bound_shrinking(successful_shrinks: int = 16):
    """Every shrink step is a round trip to the sandbox: stop after a few successful ones.

    Hypothesis has no public setting for this; its engine's constant is patched when
    present (a count, not a time limit, so the shrunk example is reproducible too)."""
    from hypothesis.internal.conjecture import engine

    if hasattr(engine, "MAX_SHRINKS"):
        engine.MAX_SHRINKS = successful_shrinks


class GradingPlugin:
    def __init__(self, course: Course, assignment: Assignment, submission: Submission):
        self.course, self.assignment, self.submission = course, assignment, submission
        self.components = {chk.id: c.name for c in assignment.components for chk in c.checks}
        self.results: dict[str, Outcome] = {}
        self.output_start = 0

    def pytest_configure(self, config):
        hypothesis.settings.register_profile(
            "grading", max_examples=self.course.max_examples, derandomize=True, database=None, deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck), report_multiple_bugs=False, print_blob=False,
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate, hypothesis.Phase.shrink])
        hypothesis.settings.load_profile("grading")
        _bound_shrinking()

    def pytest_collection_modifyitems(self, session, config, items):
        keep, drop = [], []
        for item in items:
            check = item.name.removeprefix("test_")
            if check in self.components and check not in self.results:
                keep.append(item)
                if "hidden" in item.path.parts and hasattr(item.obj, "hypothesis"):
                    item.obj._hypothesis_internal_use_seed = self.course.hidden_seed
            else:
                drop.append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    @pytest.fixture(scope="session")
    def student(self) -> Submission:
        return self.submission

    @pytest.fixture(scope="session")
    def reference(self):
        """The reference solutions, imported into the grader's process (instructors' tier only)."""
        from grader.suite import reference

        return reference.load(self.course.reference)

    @pytest.fixture(autouse=True)
    def _one_check(self, request):
        self.submission.begin_check()
        yield
        self.submission.reset()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        check = item.name.removeprefix("test_")
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                outcome = Outcome("passed")
            elif report.skipped:
                outcome = Outcome("skipped", "skipped", "the check was skipped")
            else:
                outcome = classify(call.excinfo.value) if call.excinfo else Outcome("error", "grader", "no result")
            text, self.output_start = self.submission.sandbox.read_output(
                self.output_start, self.course.limits.output_kb * 1024)
            outcome.output = text
            outcome.duration = report.duration
            self.results[check] = outcome
        return report
