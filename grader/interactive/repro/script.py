"""The repro script's source: the template (templates/script.py.tmpl: loading the student's tree,
printing, comparing as the grader compares) around a body, the stored cases' or a course recipe's."""

from functools import cache
from pathlib import Path
from string import Template

import torch

from grader.course import Course
from grader.interactive.repro.discover import known
from grader.interactive.repro.literal import literal
from grader.results import Tier

TEMPLATES = Path(__file__).parent / "templates"

ABOUT_STORED = ("The cases are the check's stored cases: the inputs, the weights and the reference's outputs, "
                "as numbers.")
ABOUT_EXAMPLE = "The example is the smallest failing one that the grader found (the report's example), exactly."


def _template(name: str) -> Template:
    return Template((TEMPLATES / name).read_text())


@cache
def _stored_outputs(path: Path, mtime_ns: int, size: int) -> dict:
    """One version of the stored outputs (keyed by its time and size), read once: only read from here."""
    return torch.load(path, weights_only=True)


def stored_body(course: Course, assignment: str, cases: list[tuple]) -> str:
    """The body that runs the stored cases `cases` of `assignment`: [(case, atol)], or (case, atol, False)
    for a module the check runs as the student builds it, without the case's weights."""
    path = course.suites / Tier.PUBLIC / "expected" / f"{assignment}.pt"
    stat = path.stat()
    data = _stored_outputs(path, stat.st_mtime_ns, stat.st_size)
    written = []
    for name, atol, *given in cases:
        c = {**data[name], **({} if not given or given[0] else {"state": None})}
        written.append(f'''
    # stored case {name!r}: the reference's output, computed by your instructors and stored as numbers
    {name!r}: {{
        "target": {c["target"]!r}, "args": {literal(tuple(c["args"]))}, "kwargs": {literal(dict(c["kwargs"]))},
        "atol": {atol!r},
        "state": {literal(dict(c["state"] or {}))},
        "inputs": {literal(tuple(c["inputs"]))},
        "output": {literal(c["output"])},
    }},''')
    return _template("stored.py.tmpl").substitute(cases="".join(written))


def write(*, course: Course, assignment: str, check: str, submission: Path, example: dict | None,
          folder: Path) -> Path:
    """Write folder/repro_CHECK.py and return its path. `example`: the failing example's values (a
    check with a course recipe), None for a stored check."""
    found = known(course, assignment)
    if check in found.stored:
        body, about = stored_body(course, assignment, found.stored[check]), ABOUT_STORED
    else:
        assert example is not None, f"{check}: a recipe's script needs the failing example"
        body, about = found.examples[check].body(example), ABOUT_EXAMPLE
    path = folder / f"repro_{check}.py"
    path.write_text(_template("script.py.tmpl").substitute(
        check=check, assignment=assignment, filename=path.name, about=about, submission=submission,
        submission_literal=repr(str(submission)), body=body))
    return path
