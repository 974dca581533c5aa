"""What a grading run produces: outcomes, checks, components, the report, and its JSON.

Standard library only, so that exports, batch summaries and the nbgrader bridge can read
a report without importing pytest, Hypothesis or torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path

from grader.findings import Attribution, Diagnosis, Frame, Note, Parameters, Sighting
from grader.measured import Gpu, Performance
from grader.pattern import Pattern
from grader.reveal import Reveal


class Status(StrEnum):
    """A check's outcome. A member equals its string: the JSON and older comparisons read the same."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


class Reason(StrEnum):
    """Why a check did not pass (a passed one has NONE); a worker fault's reason is its kind."""

    NONE = ""
    NOT_ATTEMPTED = "not_attempted"  # the stub's NotImplementedError
    MISMATCH = "mismatch"
    EXCEPTION = "exception"
    MISSING_FILE = "missing_file"
    CRASH = "crash"
    TIMEOUT = "timeout"
    TAMPER = "tamper"
    GRADER = "grader"  # the check could not use what the code returned
    MISSING = "missing"  # the check did not run (not in the suite)
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"  # the hidden tier, without the reference
    NO_CUDA = "no_cuda"


class Tier(StrEnum):
    """A check's tier, the folder of the course's suites it is in: the students' public checks, the
    instructors' hidden ones (graded with the reference at hand), the GPU's (run with --device cuda)."""

    PUBLIC = "public"
    HIDDEN = "hidden"
    CUDA = "cuda"


class ComponentStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    PARTIAL = "partial"
    NOT_ATTEMPTED = "not attempted"
    EXCUSED = "excused"
    WAITING = "waiting"
    # its points held at 0 until the instructor reviews a flag (course.toml `[policy] flagged = "hold"`)
    HELD = "held for review"


class Reach(StrEnum):
    """How the parts that a run of a composite's checks names are reached (grader.judging.attribution's
    runs; grader.suite.remote.Submission.swap)."""

    SWAPPED = "swapped"  # the reference's, in the grader, behind stand-ins: every grading's way
    OWN = "own"  # the submission's own, dressed as stand-ins are, called where they are
    # the submission's own, dressed so, each build and call a round trip to the grader as a stand-in's is: the
    # control run, where a composite that tells a stand-in by the time a call takes behaves as with stand-ins
    ECHOED = "echoed"
    # the reference's composite, in the grader, fed the submission's failing parts, in the worker
    # (grader.suite.fed): nothing of the composite's runs, so it cannot tell
    FED = "fed"


class Drawn(StrEnum):
    """Details.drawn: the set of inputs a failure was found on, where not the student's
    own run's (grader.suite.draws)."""

    AFRESH = "afresh"  # the instructor's second set, which the release does not ship


# Outcome reasons that leave a check out of its component's proportion: it could not run
# here for reasons outside the submission.
NOT_COUNTED = (Reason.UNAVAILABLE, Reason.NO_CUDA)


@dataclass(frozen=True)
class Fault:
    """A restart of the submission's process, as the grading keeps it: its kind (Reason.CRASH, TIMEOUT,
    TAMPER), what was said of it, and the check it happened in ("" where none was running)."""

    kind: Reason
    detail: str
    check: str = ""


@dataclass(frozen=True)
class Details:
    """What a check that did not pass found beside its message, each field as the check recorded it
    (grader.suite.checks.Mismatch, grader.suite.plugin.classify); a report shows the fields that are set, and
    its JSON writes them beside the check's own fields. `inputs` is the example's values as the JSON holds
    them (grader.suite.example.encode), which --repro decodes."""

    expected: str = ""
    got: str = ""
    max_abs_error: float | None = None
    where: str = ""  # where it differs, or the submission's frames where it raised or timed out
    example: str = ""  # the inputs, as the student would type them back in
    hint: str = ""
    looks_like: str = ""  # what got is, next to expected (grader.suite.forensics)
    # what the check compared with, where that is built from the submission's own output
    basis: str = ""
    pattern: Pattern | None = None  # what is wrong where, and the error's form (grader.pattern)
    inputs: dict | None = None  # the example's values, name -> grader.suite.example.encode's record
    subject: str = ""  # what was compared, as the message names it (the diagnosis's "looks like" subject)
    made: tuple[Frame, ...] = ()  # the frames that made a stray CPU tensor, the maker first
    parameters: Parameters | None = None  # a names or gradient check's parameter names
    drawn: Drawn | None = None  # the set of inputs it failed on, where not the student's own run's

    def shown(self) -> dict[str, object]:
        """The fields that are set, by name, in this order, as the JSON writes them: its entries and what a
        view may show."""
        return {f.name: _json(value) for f in fields(self)
                if (value := getattr(self, f.name)) not in ("", None, (), {}, [])}

    @classmethod
    def from_json(cls, data: dict) -> Details:
        """The details among a check's JSON entries (written by `shown`); other entries are not its. A
        document written by hand (a Gradescope test's, a regrade's) may hold a value of another form: a
        text field reads it as text, and a data field that is not of its form is left unset."""
        kept: dict = {}
        for f in fields(cls):
            value = data.get(f.name)
            if value is None or value == "":
                continue
            if f.default == "":
                kept[f.name] = str(value)
            elif f.name == "max_abs_error":
                kept[f.name] = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
            elif f.name == "made":  # a chain with one frame not of its form says no line
                frames = [Frame.from_json(v) for v in value] if isinstance(value, list) else [None]
                kept[f.name] = () if None in frames else tuple(frames)
            elif f.name == "parameters":
                kept[f.name] = Parameters.from_json(value)
            elif f.name == "pattern":
                kept[f.name] = Pattern.from_json(value)
            elif f.name == "drawn":
                kept[f.name] = Drawn(value) if isinstance(value, str) and value in set(Drawn) else None
            else:
                kept[f.name] = value if isinstance(value, dict) else None
        return cls(**kept)


def _json(value):
    """A detail as the JSON holds it."""
    if isinstance(value, Pattern | Parameters):
        return value.to_json()
    if isinstance(value, tuple):  # the frames
        return [frame._asdict() for frame in value]
    return value


@dataclass
class Outcome:
    status: Status
    reason: Reason = Reason.NONE
    message: str = ""
    details: Details = field(default_factory=Details)
    output: str = ""
    duration: float = 0.0
    unshrunk: bool = False  # found with shrinking off (grader.suite.plugin's `quick`): its example is not minimal


@dataclass
class CheckResult:
    id: str
    tier: Tier
    weight: float
    outcome: Outcome
    excused_by: tuple[str, ...] = ()  # failing parts whose reference versions make this check pass
    attribution: Attribution | None = None  # what the grader learned about the check's failing parts
    # without the reference (a student's copy): failing parts this failure may come from; it is not
    # charged until they pass their own checks (grader.judging.scoring)
    waiting_on: tuple[str, ...] = ()

    @property
    def earned(self) -> bool:
        return self.outcome.status == Status.PASSED or bool(self.excused_by) or bool(self.waiting_on)


@dataclass
class ComponentResult:
    name: str
    file: str
    score: float
    max_score: float
    checks: list[CheckResult]
    depends: tuple[str, ...]
    # forbidden APIs found: a hit scores it 0; flagged: tools that could hide one, left to the instructor
    # (grader.judging.forbidden)
    forbidden: list[Sighting] = field(default_factory=list)
    flagged: list[Sighting] = field(default_factory=list)
    # the points its checks earned, held at 0 for the instructor's review because it is flagged (the course's
    # `[policy] flagged = "hold"`); an override releases them (grader.batch.regrade). None: not held
    held: float | None = None
    # what names the bug (grader.judging.diagnosis; data, worded by grader.words); None: nothing named
    diagnosis: Diagnosis | None = None
    # the check whose failure says most about the bug (grader.judging.telling); None: as the renderer ranks them
    telling: str | None = None

    @property
    def counted(self) -> list[CheckResult]:
        return [c for c in self.checks if c.outcome.reason not in NOT_COUNTED]

    @property
    def status(self) -> ComponentStatus:
        counted = self.counted
        if self.forbidden:
            return ComponentStatus.FAILED
        if self.held is not None:
            return ComponentStatus.HELD
        if counted and all(c.outcome.reason == Reason.NOT_ATTEMPTED and not c.excused_by for c in counted):
            return ComponentStatus.NOT_ATTEMPTED
        if all(c.outcome.status == Status.PASSED for c in counted):
            return ComponentStatus.PASSED
        if all(c.earned for c in counted):
            return ComponentStatus.WAITING if self.waiting_on else ComponentStatus.EXCUSED
        return ComponentStatus.FAILED if self.score == 0 else ComponentStatus.PARTIAL

    @property
    def provisional(self) -> float:
        """The points credited for now to failing checks that wait on failing parts: part of `score`
        until those parts pass their own checks, then the checks are graded again (those still
        failing lose them)."""
        counted = self.counted
        total = sum(c.weight for c in counted)
        waits = sum(c.weight for c in counted
                    if c.outcome.status != Status.PASSED and c.waiting_on and not c.excused_by)
        scored = not self.forbidden and self.held is None
        return round(self.max_score * waits / total, 2) if total and waits and scored else 0.0

    @property
    def waiting_on(self) -> tuple[str, ...]:
        """The failing parts whose fix this component's uncharged failures wait for, in `depends` order."""
        parts = {p for c in self.counted if c.outcome.status != Status.PASSED for p in c.waiting_on}
        return tuple(sorted(parts, key=lambda p: (p not in self.depends, self.depends.index(p)
                                                  if p in self.depends else 0, p)))


@dataclass(frozen=True)
class Report:
    """Built once, at the end of a grading (grader.grading.stages.report): nothing changes it after."""

    assignment: str
    title: str
    submission: Path
    components: list[ComponentResult]
    duration: float
    notes: list[Note] = field(default_factory=list)  # on what was graded: grader.words.noted words each
    isolation: str = ""  # the submission's process: "namespaces", "seccomp" or "process" (grader.sandbox.isolation)
    isolation_detail: str = ""  # what that tier kept from it here (grader.sandbox.isolation.describe)
    # timings against torch's built-ins and the reference (grader.grading.performance); None: nothing timed
    performance: Performance | None = None
    gpu: Gpu | None = None  # with --device cuda: whether the GPU tier ran, where, how long it took
    # without the reference: parts of earlier assignments found failing their own public checks, in
    # dependency order ({"name", "file"}): the report starts there (grader.judging.attribution)
    upstream: list[dict] = field(default_factory=list)
    reveal: Reveal = Reveal.FIX  # course.toml [feedback] reveal: what the report tells of a diagnosis
    student: bool = False  # graded without the reference (a student's copy): its JSON follows `reveal` too

    @property
    def score(self) -> float:
        return round(sum(c.score for c in self.components) + (self.performance.score if self.performance else 0.0), 2)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.components) + (self.performance.max_score if self.performance else 0)

    @property
    def provisional(self) -> float:
        """The points of `score` credited for now, to checks waiting on failing parts."""
        return round(sum(c.provisional for c in self.components), 2)

    def start_here(self) -> ComponentResult | None:
        """The first component in dependency order (the order of course.toml) that is not passed."""
        done = (ComponentStatus.PASSED, ComponentStatus.EXCUSED, ComponentStatus.WAITING)
        return next((c for c in self.components if c.status not in done), None)

    def start_at(self) -> dict | None:
        """Where to start ({"name", "file"}): the earliest failing part in dependency order, across
        assignments (a failing part of an earlier one comes before every component here)."""
        if self.upstream:
            return dict(self.upstream[0])
        first = self.start_here()
        return {"name": first.name, "file": first.file} if first else None


# What one value of the JSON report may hold. Much of it is the submission's own text (its messages,
# names, frames, printing; issue 43's channel table): each string is cut to MAX_STRING characters with its
# control characters escaped (grader.trim.inert), each list to MAX_ITEMS entries (an example's data
# is MAX_NUMEL = 1024 numbers at most: grader.suite.example), nesting to MAX_DEPTH. Non-finite numbers
# are the strings "nan", "inf", "-inf" (as in the examples' data): NaN and Infinity are not JSON, and
# strict parsers (a browser's JSON.parse, Gradescope's) refuse the whole report. The submission's printing
# ("output") is cut where it is captured ([limits] output_kb), and only escaped here.
MAX_STRING, MAX_ITEMS, MAX_DEPTH = 4_000, 1_024, 16


def _bounded(value, depth: int = 0, key: str = ""):
    from grader.trim import inert

    if isinstance(value, str):
        return inert(value, None if key == "output" else MAX_STRING)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
        return f"(an integer of {value.bit_length()} bits)"  # past 4300 digits json.dumps raises
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return "... (nested too deep)"
    if isinstance(value, dict):
        items = list(value.items())
        kept = {str(_bounded(k, depth + 1)): _bounded(v, depth + 1, str(k)) for k, v in items[:MAX_ITEMS]}
        return kept | ({"...": f"{len(items) - MAX_ITEMS} more entries"} if len(items) > MAX_ITEMS else {})
    if isinstance(value, (list, tuple)):
        more = [f"... ({len(value) - MAX_ITEMS} more)"] if len(value) > MAX_ITEMS else []
        return [_bounded(v, depth + 1) for v in value[:MAX_ITEMS]] + more
    return value


def to_json(report: Report) -> dict:
    """The machine-readable report of the grader interface (fields may be added, never removed). A
    student's copy tells of a diagnosis what [feedback] reveal allows; the instructor's tells all.
    Every value bounded and inert (_bounded)."""
    return _bounded(_document(report))


def _document(report: Report) -> dict:
    from grader.words import note, noted, shown, worded

    def diagnosis(c: ComponentResult) -> dict | None:
        return shown(c.diagnosis, report.reveal) if report.student else worded(c.diagnosis)

    return {
        "assignment": report.assignment,
        "submission": str(report.submission),
        "score": report.score,
        "max_score": report.max_score,
        # of score: points credited for now to checks waiting on failing parts (graded again once they pass)
        "provisional": report.provisional,
        "reveal": str(report.reveal),  # course.toml [feedback] reveal: "fix", "bug" or "check"
        "duration_seconds": round(report.duration, 2),
        "isolation": report.isolation,
        "isolation_detail": report.isolation_detail,
        "notes": [noted(n) for n in report.notes],  # the words; "noted" the data they say
        "noted": [n.to_json() for n in report.notes],
        "components": [
            {"name": c.name, "file": c.file, "score": c.score, "max_score": c.max_score, "status": c.status,
             "tests": [{"id": t.id, "status": t.outcome.status, "hidden": t.tier == Tier.HIDDEN, "tier": t.tier,
                        "reason": t.outcome.reason, "message": t.outcome.message,
                        "duration_seconds": round(t.outcome.duration, 3), **t.outcome.details.shown(),
                        **({"excused_by": list(t.excused_by)} if t.excused_by else {}),
                        **({"waiting_on": list(t.waiting_on)} if t.waiting_on else {}),
                        **({"note": note(t.attribution), "attribution": t.attribution.to_json()}
                           if t.attribution else {}),
                        **({"output": t.outcome.output} if t.outcome.output else {})}
                       for t in c.checks],
             "forbidden": [s.to_json() for s in c.forbidden], "flagged": [s.to_json() for s in c.flagged],
             **({"held": c.held} if c.held is not None else {}),
             "diagnosis": diagnosis(c),
             "waiting_on": list(c.waiting_on), "provisional": c.provisional, "telling": c.telling}
            for c in report.components],
        "start_here": report.start_at(),
        "performance": report.performance.to_json() if report.performance else None,
        "gpu": report.gpu.to_json() if report.gpu else None,
    }

