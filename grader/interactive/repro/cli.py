"""`grade ASSIGNMENT --repro CHECK`: grade the check alone, write its script, print where."""

from pathlib import Path

from grader.course import Assignment, Course
from grader.course_table import ConfigError
from grader.interactive.repro.discover import known, reproducible
from grader.interactive.repro.literal import decode
from grader.interactive.repro.script import write
from grader.results import Outcome, Reason, Status


def main(*, course: Course, assignment: Assignment, check: str, submission: Path, folder: Path | None = None) -> int:
    """Write the script and print its path. Exit status 0 when it is written (or the check passes:
    nothing to reproduce), 1 when the failure has no example to rebuild exactly (a stub, a failure
    by an exception, an example too large to record), 2 for a check it cannot reproduce."""
    from grader.grading.only import check_ids, unknown

    spec, name = assignment, assignment.name
    if check not in check_ids(spec):
        raise unknown(check, spec, option="--repro")
    found, can = known(course, name), reproducible(course, spec)
    if check not in can:
        raise ConfigError(f"--repro: {check} cannot be reproduced as a script: {found.reason(check)}; "
                          f"{name}'s checks that can: {', '.join(can) or 'none'}")
    submission = Path(submission).resolve()
    example = None
    if check in found.examples:
        outcome = _grade_alone(course, assignment, check, submission)
        if outcome.status == Status.PASSED:
            print(f"{check} passes on {submission}: nothing to reproduce.")
            return 0
        try:
            example = failing_example(outcome, found.examples[check].inputs)
        except ValueError as e:
            print(f"{check} {outcome.status} ({outcome.message}), but {e}: `grade {name} --only {check}` "
                  "shows it.")
            return 1
    path = write(course=course, assignment=name, check=check, submission=submission, example=example,
                 folder=Path.cwd() if folder is None else folder)
    print(path)
    return 0


def failing_example(outcome: Outcome, names: tuple[str, ...]) -> dict:
    """The values `names` of a failed check's example, from the data it carries ("inputs");
    ValueError saying why they cannot be rebuilt exactly."""
    if outcome.reason == Reason.NOT_ATTEMPTED:  # a stub: its NotImplementedError is all there is to see
        raise ValueError("it is not attempted yet: there is nothing to rebuild")
    if outcome.status == Status.PASSED:
        raise ValueError("it passes: there is nothing to rebuild")
    inputs = outcome.details.inputs
    if not inputs and outcome.details.example:  # Hypothesis's own repr of its draw, rounded
        raise ValueError("its example cannot be rebuilt exactly (it failed by an exception: the report shows "
                         "the example only as text)")
    if not inputs:
        raise ValueError("it failed before its example was built (the report says where)")
    try:
        return decode(inputs, names)
    except ValueError as e:
        raise ValueError(f"its example cannot be rebuilt exactly ({e})") from None


def _grade_alone(course: Course, assignment: Assignment, check: str, submission: Path) -> Outcome:
    """The check's outcome on `submission`, graded alone (its failing example shrunk, as in the report)."""
    from grader.grading.warm import Grader

    report = Grader(course, template=False).grade(assignment=assignment, submission=submission,
                                                  only=frozenset([check]))
    return next(t.outcome for c in report.components for t in c.checks if t.id == check)
