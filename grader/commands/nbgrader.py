"""`grade nbgrader DIR`: write an nbgrader course directory; `grade nbgrader prepare DIR`: ready its submissions.

The whole pipeline is in grader.gradebook's docstring and the README ("Grade in nbgrader").
"""

import argparse
from pathlib import Path

from grader.course import find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser


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
    from grader.course import load as load_course
    from grader.gradebook.course import DEFAULT_TIMEOUT, write_course

    p = UsageParser(prog="grade nbgrader", description="Write an nbgrader course directory (nbgrader_config.py, "
                    "source/assignmentN/) whose notebooks grade with `grade`. Then see `grade nbgrader prepare`.")
    p.add_argument("directory", metavar="DIR", help="the nbgrader course directory (created if missing)")
    p.add_argument("--assignment", action="append", metavar="NAME",
                   help="an assignment to write under source/ (repeatable; default: every one)")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="give up on one submission's grading after this long (default: %(default)g)")
    p.add_argument("--course-id", metavar="ID", help="nbgrader's course id (default: the course's name, "
                   "e.g. build-a-transformer)")
    p.add_argument("--exchange", metavar="PATH", help="nbgrader's exchange folder, created if missing (default: "
                   "DIR/exchange; on a shared server, one every student can write to)")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"DIR: {args.directory!r} is not a directory")
    exchange = Path(args.exchange) if args.exchange else None
    if exchange is not None and exchange.exists() and not exchange.is_dir():
        raise ConfigError(f"--exchange: {args.exchange!r} is not a directory")
    course = load_course(find_course(args.course))
    written = write_course(course=course, directory=directory, assignments=args.assignment, timeout=args.timeout,
                           course_id=args.course_id, exchange=exchange)
    from rich.console import Console

    from grader.gradebook.config import course_id, student_settings

    console = Console(highlight=False)
    for path in written:
        console.print(f"wrote: {path}", markup=False)
    names = args.assignment or list(course.assignments)
    name = names[0] if len(names) == 1 else "NAME"
    settings = student_settings(course_id=course_id(course, args.course_id),
                                exchange=(exchange or directory / "exchange").resolve())
    console.print(f"next, from {directory}, with this environment active (NAME: {', '.join(names)}):\n"
                  f"  nbgrader generate_assignment {name}\n"
                  f"  nbgrader release_assignment {name}\n"
                  f"  nbgrader collect {name}    (LMS downloads: nbgrader zip_collect {name})\n"
                  f"  grade nbgrader prepare . --assignment {name}\n"
                  f"  nbgrader autograde {name} && nbgrader export && nbgrader generate_feedback {name}\n"
                  f"students' nbgrader config (on a shared server: /etc/jupyter/nbgrader_config.py), for "
                  f"nbgrader fetch_assignment and submit:\n"
                  + "".join(f"  {line}\n" for line in settings.splitlines()),
                  markup=False, soft_wrap=True, end="")
    return 0


def prepare(argv: list[str]) -> int:
    from rich.console import Console

    from grader.gradebook.course import prepare as prepare_submissions

    p = UsageParser(prog="grade nbgrader prepare", description="Put the released notebook into every "
                    "submitted/<student>/<assignment>/ that has no readable one, before `nbgrader autograde`.")
    p.add_argument("directory", metavar="DIR", help="the nbgrader course directory")
    p.add_argument("--assignment", required=True, metavar="NAME", help="the assignment whose notebook to put in")
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
