"""The `grade` command: a thin layer over the library; bad input is one line and exit status 2."""

import argparse
import json
import os
import sys
from pathlib import Path

from grader.config import ConfigError

COMMANDS = ("stubs", "expected", "train")


def find_course(given: str | None) -> Path:
    if given:
        return Path(given)
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "course.toml").is_file():
            return folder / "course.toml"
    kit = Path(__file__).resolve().parent.parent / "course.toml"
    if kit.is_file():
        return kit
    raise ConfigError("no course.toml here or in any parent folder (pass --course PATH)")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"grade: {message}", file=sys.stderr)
        raise SystemExit(2)


def grade_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="grade", description="Grade an assignment of the Transformer course kit. "
                "Other commands: grade stubs, grade expected, grade train (see grade COMMAND --help).")
    p.add_argument("assignment", help="the assignment to grade, e.g. assignment1")
    p.add_argument("--submission", metavar="DIR", help="the submission tree (default: the course's assignments/)")
    p.add_argument("--json", metavar="PATH", help="also write the JSON report to PATH ('-' for stdout)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="'cuda' adds the GPU checks")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    return p


def run_grade(argv: list[str]) -> int:
    from grader import config, runner

    args = grade_parser().parse_args(argv)
    course = config.load(find_course(args.course))
    submission = Path(args.submission) if args.submission else course.assignments_dir
    course.assignment(args.assignment)
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    to_stdout = args.json == "-"
    if args.json and not to_stdout and not Path(args.json).resolve().parent.is_dir():
        raise ConfigError(f"--json: the folder of {args.json!r} does not exist")
    sandbox = runner.start(course, args.assignment, submission)  # before the heavy imports below

    from rich.console import Console

    from grader import report, scoring

    console = Console(stderr=to_stdout, no_color="NO_COLOR" in os.environ or None)
    with console.status(f"grading {args.assignment} ...", spinner="dots"):
        result = runner.grade(course, args.assignment, submission, args.device, sandbox)
    report.render(result, console)
    if args.json:
        text = json.dumps(scoring.to_json(result), indent=2)
        if to_stdout:
            print(text)
        else:
            try:
                Path(args.json).write_text(text + "\n")
            except OSError as e:  # the grade is not lost: the report is on screen and the JSON goes to stdout
                print(text)
                raise ConfigError(f"--json: cannot write {args.json!r} ({e.strerror})") from None
    return 0


def _generate(argv: list[str], name: str, description: str, what: str, write_all) -> int:
    from grader import config

    p = _Parser(prog=f"grade {name}", description=description)
    p.add_argument("--check", action="store_true", help=f"only report {what} that differ; exit 1 if any")
    p.add_argument("--course", metavar="PATH")
    args = p.parse_args(argv)
    stale = write_all(config.load(find_course(args.course)), check=args.check)
    for path in stale:
        print(("stale: " if args.check else "wrote: ") + str(path))
    return 1 if args.check and stale else 0


def run_stubs(argv: list[str]) -> int:
    from grader import stubs

    return _generate(argv, "stubs", "Generate assignments/ from the solutions' marked blocks.", "stubs",
                     stubs.write_all)


def run_expected(argv: list[str]) -> int:
    from grader import expected

    return _generate(argv, "expected", "Store the reference's outputs for the public tier.", "stored outputs",
                     expected.write_all)


def run_train(argv: list[str]) -> int:
    from grader import config, train

    p = _Parser(prog="grade train", description="Train your Transformer on the bundled translation task.")
    p.add_argument("assignment", choices=("assignment4",))
    p.add_argument("--submission", metavar="DIR")
    p.add_argument("--out", metavar="DIR", default="training-output")
    p.add_argument("--steps", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--course", metavar="PATH")
    args = p.parse_args(argv)
    course = config.load(find_course(args.course))
    submission = Path(args.submission) if args.submission else course.assignments_dir
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    return train.run(submission, Path(args.out), steps=args.steps, seed=args.seed)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = {"stubs": run_stubs, "expected": run_expected, "train": run_train}.get(argv[0] if argv else "")
    try:
        return command(argv[1:]) if command else run_grade(argv)
    except ConfigError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
