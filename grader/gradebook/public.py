"""The public course that nbgrader releases with each notebook, so that students grade on their own.

source/<assignment>/ (so release/<assignment>/, and the folder a student fetches) holds a
course.toml that lists the public checks of the assignment and of those it builds on, with
`assignments = "."`, and the public tier they need: their test modules, the stored reference
outputs and classic bugs (grader.judging.diagnosis), and every module of the course folder those import.
`grade assignmentN` in that folder, or the notebook run in the student's own Jupyter, grades the
student's .py files with it, as `grade release`'s student kit does. No hidden check, seed or
solution, and no path of the instructor's: the files are those `grade release` ships, cut down
to the assignment.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w

from grader import imports
from grader.authoring.release import course_text
from grader.course import Course
from grader.course_table import ConfigError
from grader.judging import diagnosis
from grader.results import Tier

HEADER = ("# {name}, {assignment}: the public checks, written by `grade nbgrader`. `grade {assignment}` in this\n"
          "# folder grades the .py files here with them (running the notebook does the same); your\n"
          "# instructor also grades with hidden checks, which are not here. Edit nothing: the instructor's\n"
          "# copy counts.\n\n")


def files(course: Course, assignment: str) -> dict[str, bytes]:
    """Path relative to source/<assignment>/ -> content: the public course.toml and its public tier."""
    keep = {a.name for a in course.closure(assignment)}
    others = set(course.assignments) - keep
    # where the suites are imported from (`import tests.grading...`): the folder they ship under
    root = imports.import_root(course.suites)
    suites = course.suites.resolve().relative_to(root).as_posix()
    data = tomllib.loads(course_text(course, folders={"assignments": ".", "suites": suites}))
    for name in others:
        data.pop(name, None)
    out = {"course.toml": (HEADER.format(name=course.name, assignment=assignment) + tomli_w.dumps(data)).encode()}

    tier: list[Path] = []
    for name in (Tier.PUBLIC, Tier.CUDA):
        folder = course.suites / name
        tier += [p for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
                 and p.suffix != ".pyc" and not _belongs_to(p, others)] if folder.is_dir() else []
    public = course.suites / Tier.PUBLIC
    start = [p for p in tier if p.suffix == ".py"]
    start += [d / "conftest.py" for d in public.parents if d.resolve().is_relative_to(root)
              and (d / "conftest.py").is_file()]
    for path in sorted({*(p.resolve() for p in tier), *imports.closure(start, root)}):
        if not path.is_relative_to(root):
            raise ConfigError(f"{path}: lies outside the course folder {root}")
        out[path.relative_to(root).as_posix()] = path.read_bytes()
    bugs = diagnosis.path_for(course).resolve()
    if bugs.is_file():
        # the classic bugs of this assignment's components only
        components = {c.name for a in course.closure(assignment) for c in a.components}
        table = {k: v for k, v in diagnosis.load(course).items() if v.get("component") in components}
        # in the student form of the instructor's [feedback] reveal, as `grade release` ships it
        out[bugs.relative_to(root).as_posix()] = diagnosis.student_text(table, course.reveal).encode()
    return out


def _belongs_to(path: Path, assignments: set[str]) -> bool:
    """A test module or stored outputs of another assignment: test_assignment3.py, assignment3.pt."""
    return path.stem.removeprefix("test_") in assignments
