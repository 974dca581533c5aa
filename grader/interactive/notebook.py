"""Grading from a Jupyter notebook (or Colab), and progress that leaves no trace where it is not a terminal.

    import grader
    report = grader.check("assignment1")        # the report shows in the cell
    report["score"], report["max_score"]         # the JSON report, as a dict

`!grade assignment1` in a cell works too, without the spinner that redraws one line in place on
a terminal: a notebook keeps every frame of it. A kernel runs `!` commands on a pseudo-terminal
with FORCE_COLOR=1 (ipykernel), so neither rich nor isatty tells a notebook from a terminal: the
variables that Jupyter's kernel launcher (JPY_PARENT_PID) and Colab (COLAB_RELEASE_TAG) set do.
"""

import json
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

# set for a kernel and what it starts: by jupyter_client's launcher (Jupyter, VS Code, nbclient), by Colab
NOTEBOOK_VARIABLES = ("JPY_PARENT_PID", "COLAB_RELEASE_TAG")


def in_a_notebook(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this process runs in a notebook's kernel or under it (a cell's `!grade`)."""
    return any(name in environ for name in NOTEBOOK_VARIABLES)


def real_terminal(stream, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether `stream` is an interactive terminal: not a pipe, a file, or a notebook's output."""
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed file
        return False
    return tty and not in_a_notebook(environ)


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

    from grader.course import find_course
    from grader.course import load as load_course
    from grader.course_table import ConfigError
    from grader.grading.only import parse
    from grader.grading.suites import keep_hypothesis_out_of_cwd
    from grader.grading.warm import Grader
    from grader.render import report
    from grader.results import to_json

    keep_hypothesis_out_of_cwd()
    config = load_course(find_course(str(course) if course is not None else None))
    spec = config.assignment(assignment)
    tree = Path(submission) if submission is not None else config.assignments_dir
    if not tree.is_dir():
        raise ConfigError(f"submission: {str(tree)!r} is not a directory")
    chosen = parse(only, spec) if only is not None else None
    result = Grader(config, template=False).grade(assignment=spec, submission=tree, only=chosen)
    # in a notebook rich shows the report as the cell's output (HTML, in colour); elsewhere as text
    report.render(result, Console(), verbose=verbose)
    return json.loads(json.dumps(to_json(result)))  # exactly what `grade --json` writes, read back
