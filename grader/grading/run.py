"""One grading as one object: what it grades and with what (GradingRun, a Grading with its live worker),
how it was asked for (Options), what a warm grader lends it (Services), and a typed record of what
happened (Record), which the stages of grader.grading.stages fill in, in order, and from which the Report
is built once, at the end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader.course import Assignment, Course
from grader.findings import Sighting
from grader.grading.suites import pytest_run
from grader.measured import Performance
from grader.results import ComponentResult, Fault, Outcome, Reach

if TYPE_CHECKING:
    from grader.grading.known_parts import KnownParts
    from grader.grading.reuse import Reuse
    from grader.grading.split import Helper
    from grader.judging.attribution import Blame
    from grader.sandbox.host import Sandbox
    from grader.sandbox.template import Template
    from grader.suite.remote import Submission


@dataclass(frozen=True)
class Options:
    """How a grading is asked for, as plain settings: what the report says depends on them.

    `device`: "cuda" runs the GPU tier too, where this process sees a CUDA device; `only`: check ids to
    run alone, the report listing only them (grader.grading.only)."""

    device: str = "cpu"
    only: frozenset[str] | None = None


@dataclass(frozen=True)
class Services:
    """What a warm grader (grader.grading.warm) lends a grading to make it quicker, with the same report:
    live processes and what earlier gradings left.

    `template`: a started grader.sandbox.template.Template to fork the worker from; `helper`: a
    grader.grading.split.Helper that runs the later components' checks meanwhile, chosen by `cost`
    (seconds by check, from earlier gradings); `reuse`: a grader.grading.reuse.Reuse that runs again only
    the components whose files changed; `known`: a grader.grading.known_parts.KnownParts that keeps what
    the parts of other assignments gave attribution, across gradings, and runs again only the parts whose
    files changed."""

    template: Template | None = None
    helper: Helper | None = None
    cost: Mapping[str, float] = field(default_factory=dict)
    reuse: Reuse | None = None
    known: KnownParts | None = None


@dataclass
class Record:
    """What happened in a grading, each field written by one stage (grader.grading.stages)."""

    results: dict[str, Outcome] = field(default_factory=dict)  # check id -> outcome (run, attribute, shrink)
    blame: dict[str, Blame] = field(default_factory=dict)  # composites' checks (attribute)
    upstream: list[str] = field(default_factory=list)  # failing parts of earlier assignments (attribute)
    performance: Performance | None = None  # the performance feedback (grader.grading.performance.measure)
    forbidden: dict[str, tuple[list[Sighting], list[Sighting]]] = field(default_factory=dict)  # (judge_forbidden)
    faults: list[Fault] = field(default_factory=list)  # restarts of the submission's process (collect)
    refused: list[str] = field(default_factory=list)  # files not staged (collect)
    started: float = 0.0  # time.monotonic() when the sandbox was made: the grading's start (collect)
    isolation: str = ""  # the sandbox's tier (grader.sandbox.isolation.choose) (collect)
    unavailable: dict[str, Outcome | None] = field(default_factory=dict)  # checks not run here (score)
    components: list[ComponentResult] = field(default_factory=list)  # scored, then diagnosed


@dataclass
class Grading:
    """One grading of `submission` for `assignment` (resolved once from course.toml, and narrowed to
    `options.only`'s checks where given) as the stages after the worker see it: what it grades, how it was
    asked for, and its record. The worker is closed by then; what they need of it is in the record
    (grader.grading.stages.collect), so that these stages run, and are tested, on no live process."""

    course: Course
    assignment: Assignment
    submission: Path
    options: Options
    gpu: str | None  # the device the GPU tier runs on, decided here (grader.grading.pipeline._gpu)
    has_reference: bool  # the instructors' tier: the hidden suites are there, and the reference tree
    record: Record = field(default_factory=Record)


@dataclass
class GradingRun(Grading):
    """A Grading while its worker runs: in `sandbox`, through `student` (the worker, as the suites see it).
    The run holds its worker: `with run:` closes it however the stages end. `services`: what a warm grader
    lends it."""

    sandbox: Sandbox = field(kw_only=True)
    student: Submission = field(kw_only=True)
    services: Services = field(kw_only=True, default_factory=Services)

    def __enter__(self) -> GradingRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sandbox.close()

    @property
    def staged(self) -> Path:
        """The staged copy of the submission: what ran, and what is scanned."""
        return self.sandbox.dir / "submission"

    @property
    def context(self) -> tuple:
        """What a kept component's results depend on besides its files (grader.grading.reuse)."""
        o = self.options
        return self.assignment.name, o.device, self.has_reference, str(self.submission), o.only

    def run(self, checks: dict[str, tuple[str, ...]], *, quick: frozenset[str] = frozenset(),
            one_failure: bool = False, reach: Reach = Reach.SWAPPED) -> dict[str, Outcome]:
        """One pytest run of `checks` on this submission (grader.grading.suites.pytest_run)."""
        return pytest_run(self.course, self.student, checks, quick=quick, one_failure=one_failure, reach=reach)
