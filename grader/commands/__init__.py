"""One module per `grade` command, each a thin layer over one library function; here, what they
share (grader.cli's `main` picks the command)."""

import argparse
from collections.abc import Callable
from pathlib import Path

from grader.course import Assignment, Performance, find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser

# `grade NAME ...` runs grader.commands.NAME; anything else is `grade assignmentN ...`
COMMANDS = ("stubs", "expected", "train", "translate", "batch", "release", "nbgrader", "gradescope", "doctor", "export",
            "adequacy", "similarity")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def points(text: str) -> float:
    """`--fail-under`'s value: a number of points, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of points, 0 or more, got {text!r}")
    return value


def below(score: float, bar: float) -> bool:
    """`--fail-under`: a score under the bar; scores are sums of rounded points, so equal is not below."""
    return score < bar - 1e-9


def check_bar(bar: float | None, spec: Assignment, perf: Performance | None) -> None:
    """A ConfigError where `--fail-under` asks for more points than `spec` has (its components', and the
    course's [performance] `perf`'s where it gives points for the speed of its timed components)."""
    if bar is None:
        return
    timed = perf is not None and any(c.name in perf.components for c in spec.components)
    most = spec.max_score + (perf.points if perf is not None and timed else 0.0)
    if bar > most + 1e-9:
        raise ConfigError(f"--fail-under: {bar:g} is more than {spec.name}'s {most:g} points")


def regenerate(argv: list[str], *, name: str, description: str, what: str,
               write_all: Callable[..., list[Path]]) -> int:
    """`grade stubs` and `grade expected`: write generated files, or with --check list the stale ones."""
    from grader.course import load as load_course

    p = UsageParser(prog=f"grade {name}", description=description)
    p.add_argument("--check", action="store_true", help=f"only report {what} that differ; exit 1 if any")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    args = p.parse_args(argv)
    stale = write_all(load_course(find_course(args.course)), check=args.check)
    for path in stale:
        print(("stale: " if args.check else "wrote: ") + str(path))
    return 1 if args.check and stale else 0
