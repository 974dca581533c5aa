"""`grade assignmentN`: grade one tree, print the report, optionally write the JSON; `--watch`: again on every save."""

import json
import os
import sys
import time
from pathlib import Path

from grader.commands import below, check_bar, points
from grader.course import Assignment, find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser


def parser() -> UsageParser:
    from grader.commands import COMMANDS

    p = UsageParser(prog="grade", description="Grade an assignment of the Transformer course kit. "
                    f"Other commands: {', '.join(f'grade {c}' for c in COMMANDS)} (see grade COMMAND --help).")
    p.add_argument("assignment", help="the assignment to grade, e.g. assignment1")
    p.add_argument("--submission", metavar="DIR", help="the submission tree (default: the course's assignments/)")
    p.add_argument("--json", metavar="PATH", help="also write the JSON report to PATH ('-' for stdout)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="'cuda' also runs the course's GPU checks where this machine has a CUDA device "
                        "(reported as skipped elsewhere); every other check runs on the CPU either way")
    p.add_argument("--watch", action="store_true",
                   help="keep running: grade again whenever a graded file of the submission changes (Ctrl-C stops)")
    p.add_argument("--verbose", action="store_true",
                   help="show every failed check in full (default: the most telling one per component, "
                        "the others by name) and the timings")
    p.add_argument("--only", metavar="CHECK[,CHECK...]",
                   help="run and report only these checks (ids as in the report); the score counts them alone")
    p.add_argument("--repro", metavar="CHECK",
                   help="write repro_CHECK.py here: a plain script (torch and your files only) that rebuilds the "
                        "check's failing example, runs your code on it and exits 0 once it is fixed (for a "
                        "check it cannot write, it names those it can)")
    p.add_argument("--fail-under", type=points, metavar="POINTS",
                   help="exit with status 1 when the score is below POINTS (0 at or above it): for autograding "
                        "by exit status (GitHub Classroom, a CI job, a hook); with --only, the score of those checks")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def main(argv: list[str]) -> int:
    from grader.course import load as load_course
    from grader.grading.warm import Grader

    args = parser().parse_args(argv)
    course = load_course(find_course(args.course))
    submission = Path(args.submission) if args.submission else course.assignments_dir
    spec = course.assignment(args.assignment)  # looked up here, once: what follows takes the Assignment
    check_bar(args.fail_under, spec, course.performance)
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    to_stdout = args.json == "-"
    if args.json and not to_stdout and not Path(args.json).resolve().parent.is_dir():
        raise ConfigError(f"--json: the folder of {args.json!r} does not exist")
    if args.watch and to_stdout:
        raise ConfigError("--json: '-' cannot be combined with --watch (give a file, rewritten after each grade)")
    only = None
    if args.only is not None:
        from grader.grading.only import parse

        only = parse(args.only, spec)
    if args.repro is not None:
        if args.watch or args.only is not None or args.json or args.fail_under is not None:
            raise ConfigError("--repro: cannot be combined with --watch, --only, --json or --fail-under")
        from grader.interactive import repro

        return repro.main(course=course, assignment=spec, check=args.repro, submission=submission)
    if args.watch:
        if args.fail_under is not None:
            raise ConfigError("--fail-under: cannot be combined with --watch (it sets the exit status of one grade)")
        from grader.grading.split import spare_core

        watching = Grader(course, helper=spare_core(), reuse=True)
        watching.only = only
        return _watch(args, watching, spec, submission)
    # the worker imports torch while this process imports pytest, Hypothesis and rich
    grader = Grader(course, template=False)
    sandbox = grader.sandbox(assignment=spec, submission=submission, device=args.device)

    from rich.console import Console

    from grader.interactive.notebook import progress
    from grader.render import report

    console = Console(stderr=to_stdout, no_color="NO_COLOR" in os.environ or None)
    # a spinner on a real terminal only: in a pipe or a notebook (`!grade`, which sets FORCE_COLOR) each frame stays
    with progress(console, f"grading {args.assignment} ..."):
        result = grader.grade(assignment=spec, submission=submission, device=args.device, sandbox=sandbox,
                              only=only)
    report.render(result, console, verbose=args.verbose)
    if args.json:
        _write_json(result, args.json)
    return _bar(result, args.fail_under)


def _bar(result, bar: float | None) -> int:
    """`--fail-under`'s exit status: 1, with one line on stderr, where the score is below the bar."""
    if bar is None or not below(result.score, bar):
        return 0
    print(f"grade: {result.score:g} / {result.max_score:g} points is below --fail-under {bar:g}", file=sys.stderr)
    return 1


def _write_json(result, where: str) -> None:
    from grader.results import to_json

    text = json.dumps(to_json(result), indent=2)
    if where == "-":
        print(text)
        return
    try:
        Path(where).write_text(text + "\n")
    except OSError as e:  # the grade is not lost: the report is on screen and the JSON goes to stdout
        print(text)
        raise ConfigError(f"--json: cannot write {where!r} ({e.strerror})") from None


def _watch(args, grader, spec: Assignment, submission: Path) -> int:
    from rich.console import Console
    from rich.text import Text

    from grader.interactive.watch import watch, watched_files
    from grader.render import report

    console = Console(no_color="NO_COLOR" in os.environ or None)
    files = watched_files(grader.course, spec.name, submission)
    count, reused = 0, 0

    def show(result, changed: list[str]) -> None:
        nonlocal count, reused
        count += 1
        kept, reused = grader.reused_checks - reused, grader.reused_checks
        if args.json:  # before the line that says the grade is done
            _write_json(result, args.json)
        console.clear()
        report.render(result, console, verbose=args.verbose)
        why = f"after a change to {', '.join(changed)}" if changed else "first grade"
        # plain text: a folder or file name is shown as it is, never read as rich markup
        again = f" {kept} checks of components whose files did not change were not run again." if kept else ""
        console.print(Text(f"grade {count} at {time.strftime('%H:%M:%S')} ({why}), {result.duration:.1f} s.{again} "
                           f"Watching {len(files)} files in {submission}; Ctrl-C stops."))

    def announce(changed: list[str]) -> None:
        why = f" after a change to {', '.join(changed)}" if changed else ""
        console.print(Text(f"grading {args.assignment}{why} ..."))

    try:
        with grader:
            watch(grader=grader, assignment=spec, submission=submission, show=show, announce=announce)
    except KeyboardInterrupt:
        console.print(f"Stopped watching after {count} grade{'s' * (count != 1)}.")
    return 0
