"""The pytest plugin that runs grading suites: fixtures for tests, results for the scorer.

pytest and Hypothesis run here, in the grader's process; the submission runs in the
sandbox. What a check earns is decided from what this plugin records, never from
anything the submission says about itself.
"""

from dataclasses import replace

import hypothesis
import pytest

from grader import words
from grader.course import Course
from grader.judging.attribution import target
from grader.results import NOT_COUNTED, Details, Drawn, Outcome, Reach, Reason, Status, Tier
from grader.sandbox.host import StudentError, WorkerFault
from grader.suite import draws
from grader.suite.checks import Mismatch
from grader.suite.remote import Submission


def classify(exc: BaseException) -> Outcome:
    """Map what a check raised to a status, from the grader's own exception types only."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, Mismatch):
        return Outcome(Status.FAILED, Reason.MISMATCH, exc.what, exc.details())
    if isinstance(exc, StudentError):
        where = "\n".join(exc.where)
        missing = _missing_file(exc)
        if missing:
            return Outcome(Status.ERROR, Reason.MISSING_FILE, words.missing_file(missing))
        # a file that does not import fails whatever the inputs: an example would only mislead
        example = "" if {"SyntaxError", "ImportError"} & set(exc.mro) else falsifying_example(exc) or ""
        details = Details(where=where, example=example)
        if exc.not_attempted:
            return Outcome(Status.ERROR, Reason.NOT_ATTEMPTED, words.not_attempted(exc.type, exc.message), details)
        return Outcome(Status.ERROR, Reason.EXCEPTION, words.raised(exc.type, exc.message), details)
    if isinstance(exc, WorkerFault):  # where: where a timeout found the code
        return Outcome(Status.TIMEOUT if exc.kind == Reason.TIMEOUT else Status.ERROR, exc.kind, exc.detail,
                       Details(where="\n".join(exc.where or ())))
    if isinstance(exc, AssertionError):
        return Outcome(Status.FAILED, Reason.MISMATCH, str(exc) or "assertion failed")
    return Outcome(Status.ERROR, Reason.GRADER, words.unusable(exc))


def _below(name: str, depends: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The components `name` is built on, directly or through others."""
    found: set[str] = set()
    todo = list(depends.get(name, ()))
    while todo:
        part = todo.pop()
        if part not in found:
            found.add(part)
            todo += depends.get(part, ())
    return frozenset(found)


def _missing_file(exc: StudentError) -> str:
    """The submission's file that an import found missing ("assignment1/layer_norm.py"), else ""."""
    prefix = "No module named 'submission."
    if exc.type != "ModuleNotFoundError" or not exc.message.startswith(prefix):
        return ""
    return exc.message.removeprefix(prefix).partition("'")[0].replace(".", "/") + ".py"


def falsifying_example(exc: BaseException, limit: int = 1500) -> str:
    """The (shrunk) inputs Hypothesis attached to `exc` as a note, one argument per line."""
    for note in getattr(exc, "__notes__", []):
        head, _, body = str(note).partition("(")
        if not head.startswith(("Falsifying example", "Failing test case")):  # older and newer Hypothesis
            continue
        lines = [line.split("  # ")[0].strip().rstrip(",") for line in body.rstrip().removesuffix(")").splitlines()]
        text = "\n".join(line for line in lines if line and not line.startswith(("student=", "reference=")))
        return text[:limit] + (" ..." if len(text) > limit else "")
    return ""


PHASES = [hypothesis.Phase.explicit, hypothesis.Phase.generate, hypothesis.Phase.shrink]
UNSHRUNK = PHASES[:2]


def _no_local_constants():
    """Hypothesis mixes constants read from the source of "local" modules loaded in this
    process into its examples (and caches them under .hypothesis/): which examples a check
    draws would then depend on whether the reference, or an editable install of the kit,
    is loaded. Grades must not, so the pool stays empty (an internal, patched when present)."""
    from hypothesis.internal.conjecture import providers

    if hasattr(providers, "_get_local_constants") and hasattr(providers, "_local_constants"):
        providers._get_local_constants = lambda: providers._local_constants


def _bound_shrinking(successful_shrinks: int = 16):
    """Every shrink step is a round trip to the sandbox: stop after a few successful ones.

    Hypothesis has no public setting for this; its engine's constant is patched when
    present (a count, not a time limit, so the shrunk example is reproducible too)."""
    from hypothesis.internal.conjecture import engine

    if hasattr(engine, "MAX_SHRINKS"):
        engine.MAX_SHRINKS = successful_shrinks


def _digest_once():
    """Hypothesis digests a test's source (inspect and tokenize) on every run of it, to seed its
    derandomized draws and to key its database: the same bytes for the same function, every
    grading of a warm grader. Kept per function and the key it is given (an internal, wrapped when
    present)."""
    from hypothesis import core

    digest = getattr(core, "function_digest", None)
    if digest is None or hasattr(digest, "kept"):
        return
    kept: dict = {}

    def function_digest(function):
        key = (function, getattr(function, "_hypothesis_internal_add_digest", None))
        if key not in kept:
            kept[key] = digest(function)
        return kept[key]

    function_digest.kept = kept  # type: ignore[attr-defined]
    core.function_digest = function_digest


class GradingPlugin:
    """Runs the checks in `checks` (id -> parts whose reference versions are swapped in first).

    `quick`: checks whose outcome is wanted as passed or failed only, never shown: a failure is
    not shrunk. `one_failure`: only whether each component fails is wanted: a component's
    remaining checks are not run once one has failed."""

    def __init__(self, course: Course, submission: Submission, checks: dict[str, tuple[str, ...]], *,
                 quick: frozenset[str] = frozenset(), one_failure: bool = False, reach: Reach = Reach.SWAPPED):
        self.course, self.submission, self.checks = course, submission, checks
        self.quick, self.one_failure = quick, one_failure
        self.reach = reach  # how the parts each check names are reached (Submission.swap)
        self.suites = course.suites.resolve()
        self.failing: set[str] = set()  # components with a failed check
        self.not_run: set[str] = set()
        self.results: dict[str, Outcome] = {}
        self.interrupted = False  # by Ctrl-C (pytest returns INTERRUPTED for a collection error too)
        self.component_of = {chk.id: comp.name for a in course.assignments.values() for comp in a.components
                             for chk in comp.checks}
        depends = {comp.name: comp.depends for a in course.assignments.values() for comp in a.components}
        by_name = {comp.name: comp for a in course.assignments.values() for comp in a.components}
        # every part a composite is built on, all the way down, is dressed as the stand-ins are: a part of a
        # part left plain told the reference's (stand-ins all through) from the submission's (issue 43)
        self.own_parts = {name: tuple(target(by_name[d]) for d in sorted(_below(name, depends)) if d in by_name)
                          for name, parts in depends.items() if parts}
        submission.below = {name: _below(name, depends) for name in depends}
        # where the reference is at hand (the instructor's grade), each component's public checks run a second
        # set drawn from a seed of its own, which the release does not ship (grader.suite.draws); set as each
        # check starts (pytest_pyfunc_call), read by the suites (tests/grading/support.py, draws.second_set)
        staged = submission.sandbox.dir / "submission"
        self.fresh_seeds = ({comp.name: draws.for_component(course.hidden_seed, staged, [f"{a.name}/{comp.file}"])
                             for a in course.assignments.values() for comp in a.components}
                            if submission.reference is not None and submission.second_set else {})

    def pytest_configure(self, config):
        hypothesis.settings.register_profile(
            "grading", max_examples=self.course.max_examples, derandomize=True, database=None, deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck), report_multiple_bugs=False, print_blob=False,
            phases=PHASES)
        hypothesis.settings.load_profile("grading")
        # Hypothesis keeps nothing here: no example database, and its home inside the scratch folder
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(str(self.submission.sandbox.dir / "hypothesis"))
        _no_local_constants()
        _bound_shrinking()
        _digest_once()

    def pytest_collection_modifyitems(self, session, config, items):
        keep, drop = [], []
        self.submission.order = [item.name.removeprefix("test_") for item in items]
        for item in items:
            if item.name.removeprefix("test_") in self.checks:
                keep.append(item)
                # the hidden tier draws its own inputs, from the course's seed alone (never the run's or the
                # process's: an attribution run, or the other half of a split grading, draws what the first
                # run drew). The public properties draw as in the student's run, also in the instructor's
                # grade: the bug table's signatures (bugs.json), which name the bug in both, are of those
                # draws (fresh ones there lost the student's report its diagnosis: security.md, open items)
                if hasattr(item.obj, "hypothesis"):
                    # @given keeps the settings in force where its module was first imported: a suite imported
                    # earlier in this process, under another profile (another course's max_examples, a test
                    # runner's own), would draw other inputs than the student's run did
                    item.obj._hypothesis_internal_use_settings = hypothesis.settings.get_profile("grading")
                    item.obj._hypothesis_internal_use_seed = None
                if self._tier(item) == Tier.HIDDEN and hasattr(item.obj, "hypothesis"):
                    hypothesis.seed(self.course.hidden_seed)(item.obj)
            else:
                drop.append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    def _tier(self, item) -> str:
        """The tier folder of the suites that `item` is in ("public", "hidden"); a folder of that name
        above the suites (where the course is kept) says nothing."""
        try:
            return item.path.resolve().relative_to(self.suites).parts[0]
        except (ValueError, IndexError):
            return ""

    @pytest.fixture(scope="session")
    def student(self) -> Submission:
        return self.submission

    @pytest.fixture(scope="session")
    def reference(self):
        """The reference solutions, imported into the grader's process (instructors' tier only)."""
        from grader.suite import reference

        return reference.load(self.course.reference)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        check = item.name.removeprefix("test_")
        if self.one_failure and self.component_of.get(check) in self.failing:
            self.not_run.add(check)  # its component is known to fail: the check has no result
            pytest.skip("not run")

    @pytest.fixture(autouse=True)
    def _one_check(self, request):
        check = request.node.name.removeprefix("test_")
        parts = self.checks.get(check, ())
        self.submission.begin_check(self.component_of.get(check, ""), parts if self.reach == Reach.SWAPPED else ())
        self.submission.reach = self.reach
        # where a reference can be swapped in (the instructor's grade), a composite's parts are always
        # behind stand-ins, its own or the reference's, so that it cannot tell the attribution run
        own = self.own_parts.get(self.component_of.get(check, ""), ()) if self.submission.reference else ()
        if parts or own:
            self.submission.swap(*parts, own=own)
        # Hypothesis keeps a test's settings on the test function, for every later run of this process
        function = request.function
        kept = getattr(function, "_hypothesis_internal_use_settings", None)
        if check in self.quick and kept is not None:
            function._hypothesis_internal_use_settings = hypothesis.settings(kept, phases=UNSHRUNK)
        student = self.submission
        student.sandbox.check = check  # each fault the sandbox raises, and each forbidden call recorded, names it
        try:
            yield
        finally:
            if check in self.quick and kept is not None:
                function._hypothesis_internal_use_settings = kept
            student.reset()
            student.reach = Reach.SWAPPED
            student.sandbox.check = ""

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        seed = self.fresh_seeds.get(self.component_of.get(pyfuncitem.name.removeprefix("test_"), ""))
        self.submission.fresh_seed = seed
        before = draws.drawn()
        result = yield
        # passed on the student's draws: in the instructor's grade, a public check that drew its inputs
        # runs again on a set the release does not ship (grader.suite.draws)
        if seed is not None and self._tier(pyfuncitem) == Tier.PUBLIC and (
                hasattr(pyfuncitem.obj, "hypothesis") or draws.drawn() > before):
            draws.run_again(pyfuncitem, seed)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo):
        # also called for pytest's own Session.Interrupted (a KeyboardInterrupt) after a collection error
        self.interrupted = self.interrupted or not isinstance(excinfo.value, pytest.Session.Interrupted)
        # pytest's terminal reporter then formats the whole traceback, with the source of each frame
        # (Hypothesis's, the suites'): seconds that Ctrl-C waited for, to show nothing
        excinfo.traceback = excinfo.traceback[-1:]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        check = item.name.removeprefix("test_")
        if check in self.not_run:
            return report
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                outcome = Outcome(Status.PASSED)
            elif report.skipped:
                outcome = Outcome(Status.SKIPPED, Reason.SKIPPED, "the check was skipped")
            else:
                outcome = (classify(call.excinfo.value) if call.excinfo
                           else Outcome(Status.ERROR, Reason.GRADER, "no result"))
                if call.excinfo and getattr(call.excinfo.value, "drawn", None) == Drawn.AFRESH:
                    # the second set's inputs and its values are the instructor's (grader.suite.draws): shown
                    # in a report, a resubmission could answer them from a table
                    outcome.details = replace(outcome.details, drawn=Drawn.AFRESH, example="", inputs=None,
                                              expected="", got="")
            outcome.output = self.submission.new_output(self.course.limits.output_kb * 1024)
            outcome.duration = report.duration
            # what Hypothesis would have shrunk: a mismatch or an exception of the submission's
            outcome.unshrunk = check in self.quick and hasattr(item.obj, "hypothesis") and outcome.reason in (
                Reason.MISMATCH, Reason.EXCEPTION)
            self.results[check] = outcome
            if outcome.status != Status.PASSED and outcome.reason not in NOT_COUNTED:
                self.failing.add(self.component_of.get(check, ""))
        return report
