"""From check outcomes to points: trusted arithmetic over the fixed list of checks in course.toml."""

from pathlib import Path

from grader.course import Assignment, Course
from grader.results import NOT_COUNTED, CheckResult, ComponentResult, Outcome, Report


MISSING = Outcome("error", "missing", "this check did not run (not found in the grading suite)")


def score(course: Course, assignment: Assignment, submission: Path, results: dict[str, Outcome],
          unavailable: dict[str, Outcome | None], duration: float, faults=(), refused=()) -> Report:
    """Credit within a component is in proportion to the weight of the checks that passed.

    A check that is missing, skipped or errored earns nothing. Checks that could not run
    here for reasons outside the submission (the hidden tier, no GPU) are left out of
    the proportion rather than counted as failed.
    """
    components = []
    status: dict[str, str] = {}
    for comp in assignment.components:
        checks = []
        for check in comp.checks:
            if check.id in unavailable:
                if unavailable[check.id] is not None:
                    checks.append(CheckResult(check.id, check.tier, check.weight, unavailable[check.id]))
                continue
            checks.append(CheckResult(check.id, check.tier, check.weight, results.get(check.id, MISSING)))
        # parts from earlier assignments are not graded here: their status is unknown
        _set_aside(comp, checks, [d for d in comp.depends if status.get(d) != "passed"])
        counted = [c for c in checks if c.outcome.reason not in NOT_COUNTED]
        total = sum(c.weight for c in counted)
        earned = sum(c.weight for c in counted if c.outcome.status == "passed")
        points = round(comp.points * earned / total, 2) if total else 0.0
        components.append(ComponentResult(comp.name, f"{assignment.name}/{comp.file}", points, comp.points,
                                          checks, comp.depends))
        status[comp.name] = components[-1].status
    notes = []
    if any(o is not None and o.reason == "unavailable" for o in unavailable.values()):
        notes.append("Public checks only: the hidden checks are run by your instructor.")
    notes += [f"The submission's process was restarted: {f}" for f in list(faults)[:5]]
    notes += [f"Not graded, not a regular file under 1 MiB: {r}" for r in refused]
    return Report(assignment.name, assignment.title, submission, components, duration, notes)


def _set_aside(comp, checks: list[CheckResult], failing: list[str]):
    """A bug costs marks once, where it lives: when the parts a component builds on fail and
    its isolated checks (run on the reference's parts) all pass, the failures that ran on
    the submission's own parts are reported but not counted against this component."""
    isolated = [c for c in checks if c.id in comp.isolated]
    if not failing or not isolated or not all(c.outcome.status == "passed" for c in isolated):
        return
    for c in checks:
        if c.id not in comp.isolated and c.outcome.status != "passed":
            o = c.outcome
            parts = ", ".join(failing)
            c.outcome = Outcome(o.status, "dependency", f"{o.message} [not counted here: on the reference's {parts} "
                                f"this component passes, so the difference comes from your {parts}]",
                                o.details, o.output, o.duration)
