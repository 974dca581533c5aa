"""From check outcomes to points: trusted arithmetic over the fixed list of checks in course.toml."""

from pathlib import Path

from grader.course import Assignment, Course
from grader.results import NOT_COUNTED, CheckResult, ComponentResult, Outcome, Report

MISSING = Outcome("error", "missing", "this check did not run (not found in the grading suite)")


def score(course: Course, assignment: Assignment, submission: Path, results: dict[str, Outcome],
          unavailable: dict[str, Outcome | None], blame: dict[str, tuple[tuple[str, ...], bool | None]],
          duration: float, faults=(), refused=()) -> Report:
    """Credit within a component is in proportion to the weight of the checks earned.

    A check is earned when it passed, or when it failed only because parts the component
    builds on fail (`blame`: check id -> (failing parts, whether the check passes on their
    reference versions, None when that could not be tried); grader.attribution): those parts are charged in their own
    components. A check that is missing, skipped or errored earns nothing. Checks that could
    not run here for reasons outside the submission (the hidden tier, no GPU) are left out
    of the proportion rather than counted as failed.
    """
    components = []
    for comp in assignment.components:
        checks = []
        for check in comp.checks:
            if check.id in unavailable:
                if (skipped := unavailable[check.id]) is not None:
                    checks.append(CheckResult(check.id, check.tier, check.weight, skipped))
                continue
            result = CheckResult(check.id, check.tier, check.weight, results.get(check.id, MISSING))
            if check.id in blame:
                parts, passes = blame[check.id]
                result.excused_by = parts if passes else ()
                result.note = _note(parts, passes)
            checks.append(result)
        counted = [c for c in checks if c.outcome.reason not in NOT_COUNTED]
        total = sum(c.weight for c in counted)
        earned = sum(c.weight for c in counted if c.earned)
        points = round(comp.points * earned / total, 2) if total else 0.0
        components.append(ComponentResult(comp.name, f"{assignment.name}/{comp.file}", points, comp.points,
                                          checks, comp.depends))
    notes = []
    if any(o is not None and o.reason == "unavailable" for o in unavailable.values()):
        notes.append("Public checks only: the hidden checks are run by your instructor.")
    notes += [f"The submission's process was restarted: {f}" for f in list(faults)[:5]]
    notes += [f"Not graded, not a regular file under 1 MiB: {r}" for r in refused]
    return Report(assignment.name, assignment.title, submission, components, duration, notes)


def _note(parts: tuple[str, ...], passes: bool | None) -> str:
    names = " and ".join(parts)
    if passes:
        return (f"not counted here: with the reference's {names} in place of yours this check passes, "
                f"so the difference comes from your {names} (charged there)")
    if passes is False:
        return f"counted: this check fails with the reference's {names} too, so this component has a bug of its own"
    return f"your {names} also fail{'s' if len(parts) == 1 else ''} their own checks: fix {names} first, then look here"
