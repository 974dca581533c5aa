"""One module per `grade` command, each a thin layer over one library function; here, what they
share (grader.cli's `main` picks the command)."""

import argparse
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from grader.course_table import ConfigError

# `grade NAME ...` runs grader.commands.NAME; anything else is `grade assignmentN ...`
COMMANDS = ("stubs", "expected", "train", "translate", "batch", "release", "nbgrader", "gradescope", "doctor", "export",
            "adequacy", "similarity")


class UsageParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


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


def check_bar(bar: float | None, course, assignment: str) -> None:
    """A ConfigError where `--fail-under` asks for more points than `assignment` has (its components',
    and [performance]'s where the course gives points for the speed of its timed components)."""
    if bar is None:
        return
    spec = course.assignment(assignment)
    perf = course.performance
    timed = perf is not None and any(c.name in perf.components for c in spec.components)
    most = spec.max_score + (perf.points if perf is not None and timed else 0.0)
    if bar > most + 1e-9:
        raise ConfigError(f"--fail-under: {bar:g} is more than {assignment}'s {most:g} points")


def find_course(given: str | None) -> Path:
    """`--course`, else the nearest course.toml upward from here, else the kit's own."""
    if given:
        return Path(given)
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "course.toml").is_file():
            return folder / "course.toml"
    kit = Path(__file__).resolve().parents[2] / "course.toml"  # grader/commands/ is two below the kit
    if kit.is_file():
        return kit
    raise ConfigError("no course.toml here or in any parent folder (pass --course PATH)")


def keep_hypothesis_out_of_cwd() -> str | None:
    """Point Hypothesis's storage at a scratch folder removed at exit, unless the user chose one.

    Hypothesis keeps caches under `./.hypothesis` of the current directory, created on first
    use (hypothesis.configuration.storage_directory): grading has its example database off,
    but Hypothesis still caches the constants it collects from local source files there
    (`.hypothesis/constants/`). Grading must leave the folder it runs in as it was. The
    variable is read lazily, so setting it before Hypothesis first stores anything is enough;
    the submission's process never sees it (it gets a clean environment). Returns the folder
    made, if any."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return None
    home = tempfile.mkdtemp(prefix="grade-hypothesis-")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = home
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home


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
