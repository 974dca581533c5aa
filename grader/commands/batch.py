"""`grade batch DIR --assignment assignmentN`: grade a class; CSV, per-student reports, a summary."""

import argparse
import io
import json
import signal
import sys
import threading
from pathlib import Path

from grader.commands import below, check_bar, points, positive_int
from grader.course import find_course
from grader.course_table import ConfigError
from grader.report_json import Graded
from grader.usage import UsageParser


def parser() -> UsageParser:
    p = UsageParser(prog="grade batch", description="Grade every submission in DIR (one folder or .zip per "
                    "student, or nbgrader's submitted/ layout). Run it again to resume: what is graded "
                    "and unchanged is not graded again.")
    p.add_argument("dir", metavar="DIR", help="the folder of submissions")
    p.add_argument("--assignment", required=True, help="the assignment to grade, e.g. assignment1")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N", help="submissions graded at once (default 1)")
    p.add_argument("--out", metavar="OUT", default=".", help="where the outputs go (default: the current folder)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="grade on a Dask distributed cluster, e.g. tcp://host:8786")
    p.add_argument("--full-feedback", action="store_true",
                   help="feedback files show the hidden tier's checks too (default: public-tier detail only)")
    p.add_argument("--similarity", type=percent, default=similarity_default(), metavar="PERCENT",
                   help="list the pairs of submissions that share PERCENT%% of either's code or more "
                        "(default %(default)g; the stubs are not counted)")
    p.add_argument("--unsafe-process-isolation", action="store_true",
                   help="grade even where no isolation tier keeps the course out of the submissions' reach (no "
                        "namespaces, no Landlock, not root: see grade doctor), with resource limits only: "
                        "submissions can then read and write whatever your user can")
    p.add_argument("--overrides", metavar="FILE",
                   help="a CSV of student,component,points,reason: points that replace the graded ones, kept "
                        "in OUT and applied by every later run until removed from it (OUT/overrides.csv)")
    p.add_argument("--roster", metavar="FILE",
                   help="a CSV mapping folders, Gradescope and LMS identities to one student id (docs: How-to, LMS), "
                        "kept in OUT and used by every later run and by grade export (OUT/roster.csv)")
    p.add_argument("--fail-under", type=points, metavar="POINTS",
                   help="exit with status 1 when any submission's total (after overrides) is below POINTS, "
                        "naming them on stderr; 0 when every one is at or above it")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def similarity_default() -> float:
    from grader.batch.similarity import THRESHOLD

    return THRESHOLD * 100


def percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage above 0 and at most 100, got {text!r}")
    return value


def main(argv: list[str]) -> int:
    from grader.course import load as load_course

    args = parser().parse_args(argv)
    course = load_course(find_course(args.course))
    check_bar(args.fail_under, course.assignment(args.assignment), course.performance)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out: {args.out!r} is not a directory")
    if not out.resolve().parent.is_dir():
        raise ConfigError(f"--out: the folder of {args.out!r} does not exist")

    from rich.console import Console

    from grader.batch import html, run, summary

    console = Console(width=min(Console().width, 100))
    stop = threading.Event()

    def interrupt(signum, frame):
        stop.set()
        raise KeyboardInterrupt

    # an ignored SIGINT stays ignored (a background job of a shell script): Python's own rule
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupt)
    try:
        batch = run.run_batch(course=course, assignment=args.assignment, root=Path(args.dir), out=out,
                              options=options(args, console, stop))
    except KeyboardInterrupt:
        console.print(f"Interrupted: what was graded is in {out}; run the same command again to go on.")
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    if not batch.rows:
        return 0
    recorder = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    recorder.print(summary.render(batch.summary))
    (out / "summary.txt").write_text(recorder.export_text())
    (out / "summary.json").write_text(json.dumps(batch.summary, indent=2) + "\n")
    html.write_class(out, batch.summary, batch.rows)
    console.print(summary.render(batch.summary))
    if batch.changes is not None:
        console.print(f"{summary.changed_line(batch.summary)}: {out / 'changes.csv'}")
    _roster_gaps(batch, console)
    failed = f", {batch.failed} failed with a grader error (status grader_error, retried by the next run)"
    console.print(f"{batch.graded} graded{failed if batch.failed else ''}, {batch.reused} unchanged since the last "
                  f"run; grades in {out / 'grades.csv'}, reports in {out / 'reports'}, "
                  f"feedback in {out / 'feedback'}, Gradescope files in {out / 'gradescope'}, "
                  f"the class in {out / 'class.html'}.")
    if batch.failed and not batch.graded:
        # the grader's own trouble, not the class's: a batch that graded nothing is no success
        print(f"grade batch: no submission could be graded in this run ({batch.graded} graded, {batch.failed} "
              f"failed with a grader error); the first error: {shorten(batch.first_error)}", file=sys.stderr)
        return 1
    return _bar(batch.rows, args.fail_under, out)


def _roster_gaps(batch, console) -> None:
    """The folders the roster does not name (graded all the same; their rows have no student_id) and the
    roster's students with no submission."""
    for student in batch.not_in_roster:
        console.print(f"not in the roster: {shorten(student)} (graded; no student_id)", markup=False, highlight=False)
    for student in batch.no_submission:
        console.print(f"no submission: {shorten(student)} (in the roster)", markup=False, highlight=False)


def _bar(rows: list[tuple[str, Graded]], bar: float | None, out: Path) -> int:
    """`--fail-under`'s exit status: 1 where a student's total is below the bar, with one line on stderr
    naming the first few (grades.csv has them all)."""
    totals = [(student, doc.total) for student, doc in rows]
    low = [(student, total) for student, total in totals if bar is not None and below(total, bar)]
    if not low:
        return 0
    from grader.batch.safe import inert

    named = ", ".join(f"{inert(student)} ({score:g})" for student, score in low[:5])
    more = f" and {len(low) - 5} more" if len(low) > 5 else ""
    print(f"grade batch: {len(low)} of {len(rows)} submissions scored below --fail-under {bar:g}: {named}{more} "
          f"(every total: {out / 'grades.csv'})", file=sys.stderr)
    return 1


def options(args, console, stop: threading.Event):
    """run_batch's options from the command line's."""
    from grader.batch import run

    return run.Options(jobs=args.jobs, scheduler=args.scheduler, unsafe_process_isolation=args.unsafe_process_isolation,
                       full_feedback=args.full_feedback, similar=args.similarity / 100,
                       overrides=Path(args.overrides) if args.overrides else None,
                       roster=Path(args.roster) if args.roster else None, console=console, stop=stop)


def shorten(message: str, limit: int = 200) -> str:
    """One line of at most `limit` characters (the whole message is in the student's report)."""
    from grader.batch.safe import inert

    line = inert(" ".join(message.split()))
    return line if len(line) <= limit else line[:limit - 1] + "…"
