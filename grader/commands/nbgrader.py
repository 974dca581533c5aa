"""`grade nbgrader DIR`: write an nbgrader course directory; `grade nbgrader prepare DIR`: ready its submissions.

The whole pipeline, from DIR (the kit's environment active, for `alembic` and the kernel):

    grade nbgrader DIR --assignment assignment1
    cd DIR && nbgrader generate_assignment assignment1
    nbgrader collect assignment1  (or: nbgrader zip_collect assignment1, for LMS downloads)
    grade nbgrader prepare DIR --assignment assignment1
    nbgrader autograde assignment1 && nbgrader export && nbgrader generate_feedback assignment1
"""

import argparse
from pathlib import Path

from grader.cli import UsageParser, find_course
from grader.course import ConfigError


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def main(argv: list[str]) -> int:
    if argv and argv[0] == "prepare":
        return prepare(argv[1:])
    from grader import load_course
    from grader.gradebook.course import DEFAULT_TIMEOUT, write_course

    p = UsageParser(prog="grade nbgrader", description="Write an nbgrader course directory (nbgrader_config.py, "
                    "source/assignmentN/) whose notebooks grade with `grade`. Then see `grade nbgrader prepare`.")
    p.add_argument("directory", metavar="DIR", help="the nbgrader course directory (created if missing)")
    p.add_argument("--assignment", action="append", metavar="NAME",
                   help="an assignment to write under source/ (repeatable; default: every one)")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="give up on one submission's grading after this long (default: %(default)g)")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"DIR: {args.directory!r} is not a directory")
    course = load_course(find_course(args.course))
    written = write_course(course=course, directory=directory, assignments=args.assignment, timeout=args.timeout)
    from rich.console import Console

    console = Console(highlight=False)
    for path in written:
        console.print(f"wrote: {path}", markup=False)
    names = args.assignment or list(course.assignments)
    name = names[0] if len(names) == 1 else "NAME"
    console.print(f"next, from {directory}, with this environment active (NAME: {', '.join(names)}):\n"
                  f"  nbgrader generate_assignment {name}\n"
                  f"  nbgrader collect {name}    (LMS downloads: nbgrader zip_collect {name})\n"
                  f"  grade nbgrader prepare . --assignment {name}\n"
                  f"  nbgrader autograde {name} && nbgrader export && nbgrader generate_feedback {name}",
                  markup=False, soft_wrap=True)
    return 0


def prepare(argv: list[str]) -> int:
    from rich.console import Console

    from grader.gradebook.course import prepare as prepare_submissions

    p = UsageParser(prog="grade nbgrader prepare", description="Put the released notebook into every "
                    "submitted/<student>/<assignment>/ that has no readable one, before `nbgrader autograde`.")
    p.add_argument("directory", metavar="DIR", help="the nbgrader course directory")
    p.add_argument("--assignment", required=True, metavar="NAME")
    args = p.parse_args(argv)
    if not Path(args.directory).is_dir():
        raise ConfigError(f"DIR: {args.directory!r} is not a directory")
    states = prepare_submissions(directory=Path(args.directory), assignment=args.assignment)
    console = Console(highlight=False)
    for student, state in states.items():
        console.print(f"{state}: {student}", markup=False)
    if not states:
        console.print(f"no submissions of {args.assignment} under {Path(args.directory) / 'submitted'}", markup=False)
    return 0
