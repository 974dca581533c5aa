"""Grading from a Jupyter notebook (or Colab), and progress that leaves no trace where it is not a terminal.

    import grader
    report = grader.check("assignment1")        # the report shows in the cell
    report["score"], report["max_score"]         # the JSON report, as a dict

`!grade assignment1` in a cell works too: its output is a pipe, so the spinner, which on a
terminal redraws one line in place, is left out (every frame of it would be kept in the
notebook). Jupyter kernels set FORCE_COLOR, which makes rich treat any output as a terminal:
whether the output is one is asked of the file itself.
"""

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path


def real_terminal(stream) -> bool:
    """Whether `stream` is an interactive terminal (not a pipe, a file or a notebook's output)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed file
        return False


def progress(console, text: str) -> AbstractContextManager:
    """rich's spinner with `text` on a real terminal; elsewhere nothing."""
    if real_terminal(console.file) and not console.is_jupyter:
        return console.status(text, spinner="dots")
    return nullcontext()


def check(assignment: str, submission: str | Path | None = None, *, only: str | None = None,
          verbose: bool = False, course: str | Path | None = None) -> dict:
    """Grade `submission` (default: the course's assignments/ folder) for `assignment` as `grade
    assignmentN` does, show the report (in a notebook, as the cell's output; elsewhere on stdout)
    and return the JSON report as a dict (`score`, `max_score`, `components`, ...).

    `only`: check ids separated by commas, as `--only`; `verbose`: as `--verbose`; `course`: the
    course.toml (default: found from the current folder upward). A bad value raises
    grader.ConfigError, whose message names it."""
    from rich.console import Console

    from grader import load_course
    from grader.cli import find_course, keep_hypothesis_out_of_cwd
    from grader.course import ConfigError
    from grader.only import parse
    from grader.render import report
    from grader.results import to_json
    from grader.warm import Grader

    keep_hypothesis_out_of_cwd()
    config = load_course(find_course(str(course) if course is not None else None))
    spec = config.assignment(assignment)
    tree = Path(submission) if submission is not None else config.assignments_dir
    if not tree.is_dir():
        raise ConfigError(f"submission: {str(tree)!r} is not a directory")
    chosen = parse(only, spec) if only is not None else None
    result = Grader(config, template=False).grade(assignment=assignment, submission=tree, only=chosen)
    # in a notebook rich shows the report as the cell's output (HTML, in colour); elsewhere as text
    report.render(result, Console(), verbose=verbose)
    return to_json(result)
