"""Generate the student stubs from the solutions: each marked block becomes a TODO that raises.

Solutions mark their code with nbgrader's `### BEGIN SOLUTION` / `### END SOLUTION`;
what lies outside the markers (imports, signatures, docstrings) is copied as it is.
"""

import re
from pathlib import Path

from grader.course import Course

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)|^(\s*)class\s+(\w+)")


class MarkerError(ValueError):
    pass


def _owner(lines: list[str], index: int, indent: int) -> str:
    """The dotted name (Class.method) of the def that encloses line `index`."""
    names, limit = [], indent
    for line in reversed(lines[:index]):
        m = _DEF.match(line)
        if m:
            here = len(m.group(1) if m.group(1) is not None else m.group(3))
            if here < limit:
                names.append(m.group(2) or m.group(4))
                limit = here
    return ".".join(reversed(names))


def make_stub(source: str, assignment: str, path: str = "") -> str:
    lines = source.splitlines(keepends=True)
    out, start = [], None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped == BEGIN:
            if start is not None:
                raise MarkerError(f"{path}:{i + 1}: {BEGIN} inside another block")
            start = i
            indent = len(line) - len(line.lstrip())
            owner = _owner(lines, i, indent)
            if not owner:
                raise MarkerError(f"{path}:{i + 1}: {BEGIN} outside a function")
            pad = line[:indent]
            out.append(f"{pad}# TODO: your code here (the docstring above says what to build).\n")
            out.append(f'{pad}raise NotImplementedError("{assignment}: {owner}")\n')
        elif stripped == END:
            if start is None:
                raise MarkerError(f"{path}:{i + 1}: {END} without {BEGIN}")
            start = None
        elif start is None:
            out.append(line)
    if start is not None:
        raise MarkerError(f"{path}:{start + 1}: {BEGIN} never closed")
    return "".join(out)


def expected_stubs(course: Course) -> dict[Path, str]:
    stubs = {}
    for name in course.assignments:
        for src in sorted((course.reference / name).glob("*.py")):
            stubs[course.assignments_dir / name / src.name] = make_stub(src.read_text(), name, str(src))
    return stubs


def write_all(course: Course, check: bool = False) -> list[Path]:
    """Write every stub that differs from its generated text; return those paths."""
    stale = []
    for path, text in expected_stubs(course).items():
        if not path.exists() or path.read_text() != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    return stale
