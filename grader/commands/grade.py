"""`grade assignmentN`: grade one tree, print the report, optionally write the JSON."""

import json
import os
from pathlib import Path

from grader.cli import UsageParser, find_course
from grader.course import ConfigError


def parser() -> UsageParser:
    p = UsageParser(prog="grade", description="Grade an assignment of the Transformer course kit. "
                    "Other commands: grade stubs, grade expected, grade train (see grade COMMAND --help).")
    p.add_argument("assignment", help="the assignment to grade, e.g. assignment1")
    p.add_argument("--submission", metavar="DIR", help="the submission tree (default: the course's assignments/)")
    p.add_argument("--json", metavar="PATH", help="also write the JSON report to PATH ('-' for stdout)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="'cuda' also runs the course's GPU checks where this machine has a CUDA device "
                        "(reported as skipped elsewhere); every other check runs on the CPU either way")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def main(argv: list[str]) -> int:
    from grader import grading, load_course

    args = parser().parse_args(argv)
    course = load_course(find_course(args.course))
    submission = Path(args.submission) if args.submission else course.assignments_dir
    course.assignment(args.assignment)
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    to_stdout = args.json == "-"
    if args.json and not to_stdout and not Path(args.json).resolve().parent.is_dir():
        raise ConfigError(f"--json: the folder of {args.json!r} does not exist")
    # the worker imports torch while this process imports pytest, Hypothesis and rich
    sandbox = grading.start_sandbox(course=course, assignment=args.assignment, submission=submission,
                                    device=args.device)

    from rich.console import Console

    from grader.render import report
    from grader.results import to_json

    console = Console(stderr=to_stdout, no_color="NO_COLOR" in os.environ or None)
    with console.status(f"grading {args.assignment} ...", spinner="dots"):
        result = grading.grade_submission(course=course, assignment=args.assignment, submission=submission,
                                          device=args.device, sandbox=sandbox)
    report.render(result, console)
    if args.json:
        text = json.dumps(to_json(result), indent=2)
        if to_stdout:
            print(text)
        else:
            try:
                Path(args.json).write_text(text + "\n")
            except OSError as e:  # the grade is not lost: the report is on screen and the JSON goes to stdout
                print(text)
                raise ConfigError(f"--json: cannot write {args.json!r} ({e.strerror})") from None
    return 0
