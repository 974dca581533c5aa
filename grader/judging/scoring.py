"""From check outcomes to points: trusted arithmetic over the fixed list of checks in course.toml."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader import words
from grader.course import Assignment, Course
from grader.findings import Attributed, Attribution, Note, Noted, Sighting
from grader.judging.attribution import Blame
from grader.results import (
    NOT_COUNTED,
    CheckResult,
    ComponentResult,
    ComponentStatus,
    Fault,
    Outcome,
    Reason,
    Report,
    Reveal,
    Status,
)

MISSING = Outcome(Status.ERROR, Reason.MISSING, words.NOT_IN_SUITE)


@dataclass(frozen=True)
class Judged:
    """What scoring is given. `results`: check id -> outcome; `unavailable`: checks that could not run
    here for reasons outside the submission (an Outcome to show, or None to leave the check out);
    `blame`: the attribution of composites' checks (grader.judging.attribution); `forbidden`: component
    -> (hits, flags) (grader.judging.forbidden); `hold`: a flag holds its component's points at 0 for
    review (the course's `[policy] flagged = "hold"`, the default); False: a flag costs nothing ("count")."""

    results: Mapping[str, Outcome]
    unavailable: Mapping[str, Outcome | None] = field(default_factory=dict)
    blame: Mapping[str, Blame] = field(default_factory=dict)
    forbidden: Mapping[str, tuple[list[Sighting], list[Sighting]]] = field(default_factory=dict)
    hold: bool = True


def score(course: Course, assignment: Assignment, submission: Path, judged: Judged, duration: float = 0.0) -> Report:
    """The Report of scoring alone (no sandbox: no isolation, timings, faults or diagnosis); a grading
    builds its own from `components` and `notes` (grader.grading.stages)."""
    return Report(assignment.name, assignment.title, submission, components(assignment, judged), duration,
                  notes(course, judged), reveal=getattr(course, "reveal", Reveal.FIX), student=student(course))


def student(course: Course) -> bool:
    """Whether this is a student's copy: graded without the reference."""
    return not course.reference.exists()


def components(assignment: Assignment, judged: Judged) -> list[ComponentResult]:
    """Credit within a component is in proportion to the weight of the checks earned.

    A check of a composite whose parts fail is decided by its run on the reference's versions
    of those parts (`blame`, grader.judging.attribution): a failure there is the composite's own, a
    pass excuses a failure on the student's parts (charged in the parts' components). A check
    that is missing, skipped or errored earns nothing. Checks that could not run here for
    reasons outside the submission (the hidden tier, no GPU) are left out of the proportion
    rather than counted as failed. A component found using an API that course.toml forbids it
    (`forbidden`: name -> (hits, flags), grader.judging.forbidden) scores 0; its checks keep their outcomes.
    One flagged, where the course holds flags (`hold`), scores 0 for the instructor's review: the points
    its checks earned are kept beside (`held`), for an override to release.
    """
    found: list[ComponentResult] = []
    waiting: dict[str, tuple[str, ...]] = {}  # a component here that waits -> the parts it waits on
    for comp in assignment.components:
        checks = []
        for check in comp.checks:
            if check.id in judged.unavailable:
                if (skipped := judged.unavailable[check.id]) is not None:
                    checks.append(CheckResult(check.id, check.tier, check.weight, skipped))
                continue
            result = CheckResult(check.id, check.tier, check.weight, judged.results.get(check.id, MISSING))
            if check.id in judged.blame:
                _attribute(result, judged.blame[check.id], waiting)
            checks.append(result)
        counted = [c for c in checks if c.outcome.reason not in NOT_COUNTED]
        total = sum(c.weight for c in counted)
        earned = sum(c.weight for c in counted if c.earned)
        points = round(comp.points * earned / total, 2) if total else 0.0
        hits, flags = judged.forbidden.get(comp.name, ([], []))
        held = points if flags and judged.hold and not hits else None
        found.append(ComponentResult(comp.name, f"{assignment.name}/{comp.file}",
                                     0.0 if hits or held is not None else points, comp.points, checks, comp.depends,
                                     hits, flags, held=held))
        if found[-1].status == ComponentStatus.WAITING:
            waiting[comp.name] = found[-1].waiting_on
    return found


def notes(course: Course, judged: Judged, faults: Iterable[Fault] = (), refused: Iterable[str] = ()) -> list[Note]:
    """The report's notes on what was graded, as data (grader.words.noted words them): the hidden
    tier left out, restarts of the submission's process (`faults`), files not staged (`refused`)."""
    # a student's copy: hidden checks listed but not here, or (a release) not even listed
    public = any(o is not None and o.reason == Reason.UNAVAILABLE for o in judged.unavailable.values())
    return [*([Note(Noted.PUBLIC_ONLY)] if public or student(course) else []),
            *(Note(Noted.RESTARTED, f.detail) for f in list(faults)[:5]),
            *(Note(Noted.NOT_STAGED, r) for r in refused)]


def _attribute(result: CheckResult, blame: Blame, waiting: dict[str, tuple[str, ...]]) -> None:
    """What the check's failing parts mean for it (grader.findings.Attributed), as data: grader.words
    words it."""
    own, on_reference = result.outcome, blame.on_reference
    if on_reference is None:
        # no reference to swap in (a student's copy): a failure that may come from the failing parts is
        # not charged, so that the report charges what the instructor's does, where the bug is; it is
        # judged once they pass. A part that itself only waits passes the wait on to its own parts.
        if own.status != Status.PASSED and own.reason != Reason.NOT_ATTEMPTED:
            result.waiting_on = tuple(dict.fromkeys(q for p in blame.parts for q in waiting.get(p, (p,))))
            result.attribution = Attribution(Attributed.WAITING, result.waiting_on)
        else:
            result.attribution = Attribution(Attributed.PARTS_FIRST, blame.parts)
    elif blame.told is not None:
        result.outcome = blame.told
        result.attribution = Attribution(blame.why, blame.parts)
    elif on_reference.status == Status.PASSED:
        if own.status != Status.PASSED:
            result.excused_by = blame.parts
            result.attribution = Attribution(Attributed.EXCUSED, blame.parts)
    elif own.status == Status.PASSED:
        result.outcome = on_reference
        result.attribution = Attribution(Attributed.HIDDEN, blame.parts)
    else:
        result.attribution = Attribution(Attributed.OWN, blame.parts)
