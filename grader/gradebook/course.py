"""Write an nbgrader course directory from course.toml: nbgrader_config.py and source/<assignment>/.

Each source/<assignment>/ is a submission tree as `grade --submission` reads it, plus one
notebook:

    source/assignment3/assignment3.ipynb     the notebook nbgrader grades
    source/assignment3/assignment1/*.py      the stubs of every assignment it builds on,
    source/assignment3/assignment2/*.py      so that the folder nbgrader autogrades
    source/assignment3/assignment3/*.py      (autograded/<student>/assignment3/) is the student's tree

The stubs come from the course's `assignments/`, never from `solutions/`: nbgrader releases
.py files as they are. The notebook holds a locked introduction, a locked cell that runs the
grader on the notebook's folder in a process of its own (grader.gradebook.cells), and one
locked, autograded cell per component worth that component's points.

nbgrader_config.py covers every assignment of course.toml, whichever were written: it keeps
autograde from replacing the students' .py files with the stubs (`exclude_overwriting`),
makes autograde run the released cells only (grader.gradebook.released), keeps the kernel
from importing anything from the submission's folder, and collects LMS downloads.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from grader.authoring.stubs import BEGIN, END
from grader.course import Assignment, ConfigError, Course

# grade ids of the cells that are not a component
INTRO, RUN, PERFORMANCE = "grader_intro", "grader_run", "performance"
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# a cell runs one whole grading run: this long, then the student's components score 0
DEFAULT_TIMEOUT = 1800.0


def notebook_name(assignment: str) -> str:
    return f"{assignment}.ipynb"


def tree_files(course: Course, assignment: str) -> list[str]:
    """The files of a submission tree for `assignment`, relative to it: every package it stages."""
    return [f"{a.name}/{name}" for a in course.closure(assignment) for name in ("__init__.py", *a.files)]


def performance_points(course: Course, assignment: str) -> float:
    """What the performance tier adds to `assignment`'s score (grader.performance): its grade cell's points."""
    config = course.performance
    timed = config is not None and any(c.name in config.components for c in course.assignment(assignment).components)
    return config.points if config is not None and timed else 0.0


def write_course(*, course: Course, directory: Path, assignments: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> list[Path]:
    """Write nbgrader_config.py and source/<assignment>/ for `assignments` (default: all); return the paths.

    Existing files of the same names are replaced; nothing else in `directory` is touched."""
    names = list(assignments or course.assignments)
    for name in names:
        course.assignment(name)
    if course.assignments_dir.resolve() == course.reference.resolve():
        raise ConfigError(f"{course.path.name}: [course] assignments and reference are the same folder "
                          f"({course.assignments_dir}): the stubs would be the solutions")
    # everything is read and checked before anything is written
    stubs = {rel: _stub(course, rel) for name in names for rel in tree_files(course, name)}
    notebooks = {name: notebook(course=course, assignment=name, timeout=timeout) for name in names}
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "nbgrader_config.py"]
    written[0].write_text(config_text(course=course, timeout=timeout))
    for name in names:
        source = directory / "source" / name
        for rel in tree_files(course, name):
            path = source / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(stubs[rel])
            written.append(path)
        written.append(source / notebook_name(name))
        _write_notebook(notebooks[name], written[-1])
    return written


def _stub(course: Course, rel: str) -> str:
    path = course.assignments_dir / rel
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the stub ({e.strerror}): run `grade stubs`") from None
    if BEGIN in text or END in text:
        raise ConfigError(f"{path}: holds a solution marker ({BEGIN!r}): nbgrader would release it as it is")
    return text


def notebook(*, course: Course, assignment: str, timeout: float = DEFAULT_TIMEOUT):
    """The nbformat notebook that grades `assignment`: intro, the grader's run, one grade cell per component
    (and one for the performance tier, where course.toml gives it points in this assignment)."""
    import nbformat

    spec = course.assignment(assignment)
    for comp in spec.components:
        if comp.name in (INTRO, RUN, PERFORMANCE):
            raise ConfigError(f"{course.path.name}: {assignment}.{comp.name}: the name is reserved for a cell")
        # a component's name is its cell's nbgrader grade id and nbformat cell id
        if not _CELL_ID.fullmatch(comp.name):
            raise ConfigError(f"{course.path.name}: {assignment}.{comp.name}: nbgrader needs a name of at most "
                              f"64 letters, digits, '_' or '-'")
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
                   "language_info": {"name": "python"}}
    nb.cells.append(nbformat.v4.new_markdown_cell(_intro(spec), id=INTRO, metadata=_meta(INTRO)))
    run = (f"# Grades the .py files next to this notebook with the course's grader, in a process of its own:\n"
           f"# no student code runs in this notebook. nbgrader restores these cells before grading.\n"
           f"from grader.gradebook import cells\n\n"
           f"report = cells.run_grader(assignment={assignment!r}, course={str(course.path)!r}, "
           f"timeout={timeout:g})")
    nb.cells.append(nbformat.v4.new_code_cell(run, id=RUN, metadata=_meta(RUN)))
    for comp in spec.components:
        source = (f"# {comp.name} ({assignment}/{comp.file}): {comp.points:g} points\n"
                  f"cells.component(report, {comp.name!r}, points={comp.points!r})")
        nb.cells.append(nbformat.v4.new_code_cell(source, id=comp.name, metadata=_meta(comp.name, comp.points)))
    # the report's total counts the performance tier's points too, so the gradebook's must
    if points := performance_points(course, assignment):
        source = (f"# performance of the timed components: {points:g} points\n"
                  f"cells.performance(report, points={points!r})")
        nb.cells.append(nbformat.v4.new_code_cell(source, id=PERFORMANCE, metadata=_meta(PERFORMANCE, points)))
    nbformat.validate(nb)
    return nb


def _meta(grade_id: str, points: float | None = None) -> dict:
    """nbgrader's cell metadata, schema 3 (nbgrader/nbgraderformat/v3.json): locked, graded when it has points."""
    meta: dict = {"grade": points is not None, "solution": False, "locked": True, "grade_id": grade_id,
                  "schema_version": 3}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta, "editable": False, "deletable": False}


def _intro(spec: Assignment) -> str:
    rows = "\n".join(f"| `{c.name}` | `{spec.name}/{c.file}` | {c.points:g} |" for c in spec.components)
    return (f"# {spec.name}: {spec.title}\n\n"
            f"Your work is in the `.py` files of `{spec.name}/` next to this notebook (and of the assignments "
            f"it builds on). This notebook only grades them: it runs `grade {spec.name}` on this folder in a "
            f"process of its own and shows each component's score. Do not edit it: its cells are restored "
            f"before grading, and cells you add are not run.\n\n"
            f"| component | file | points |\n|---|---|---|\n{rows}\n")


def _write_notebook(nb, path: Path) -> None:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def collect_regexp(course: Course) -> str:
    """FileNameCollectorPlugin.named_regexp for LMS downloads: one archive per student, `<student_id>_<any>.zip`.

    zip_collect extracts each archive to downloaded/<assignment>/extracted/<archive name>/ and
    matches this against every extracted file's absolute path: `student_id` is the archive's
    name up to its first underscore, `file_id` a whitelisted file of the course
    (`assignment1/layer_norm.py`), found at any depth of the archive, so that it lands where
    `grade` looks for it. Anything else in the archive is not collected. The first
    `/downloaded/<x>/extracted/` of the path counts, so that an archive holding such folders
    cannot claim another student's name; macOS's `__MACOSX/` copies are skipped."""
    files = sorted({rel for name in course.assignments for rel in tree_files(course, name)})
    alternatives = "|".join(re.escape(rel) for rel in files)
    return (r"^(?!.*/__MACOSX/).*?/downloaded/[^/]+/extracted/(?P<student_id>[^/_]+)_[^/]*/(?:.*/)?"
            rf"(?P<file_id>{alternatives})$")


def config_text(*, course: Course, timeout: float = DEFAULT_TIMEOUT) -> str:
    exclude = {name: tree_files(course, name) for name in course.assignments}
    sanitize = ["grader.gradebook.released.ReleasedCellsOnly", *(
        f"nbgrader.preprocessors.{name}" for name in
        ("ClearOutput", "DeduplicateIds", "OverwriteKernelspec", "OverwriteCells", "CheckCellMetadata"))]
    return f'''"""nbgrader's settings for {course.name}, written by `grade nbgrader` from {course.path}.

Written again, whole, each time `grade nbgrader` writes this folder: keep settings of your own
in another nbgrader config file (~/.jupyter/nbgrader_config.py). Run nbgrader from this folder
with the kit's Python environment active: the gradebook needs `alembic` on PATH, and the
notebooks' kernel (the Python that runs nbgrader) needs the kit installed.
"""

import os

c = get_config()  # noqa: F821 (defined by nbgrader's config loader)

# The kernel runs in each submission's folder: a student's `grader/` or `ipykernel_launcher.py`
# there must not be what it imports (PYTHONSAFEPATH: Python >= 3.11, inherited by the kernel).
os.environ["PYTHONSAFEPATH"] = "1"
c.Execute.extra_arguments = ["--IPKernelApp.ignore_cwd=True"]
c.Execute.kernel_name = "python3"
# one cell runs a whole grading run, which gives up after {timeout:g} s
c.Execute.timeout = {int(timeout) + 120}

# The students' .py files are what is graded: autograde must not copy source/'s stubs over them.
c.Autograde.exclude_overwriting = {json.dumps(exclude, indent=4)}

# Autograde runs the released cells, never cells a student added or edited.
c.Autograde.sanitize_preprocessors = {json.dumps(sanitize, indent=4)}
c.ReleasedCellsOnly.release_directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "release")

# nbgrader zip_collect: one archive per student, named <student_id>_<anything>.zip, holding the
# submission's assignmentN/ folders; only the course's .py files are collected.
c.FileNameCollectorPlugin.named_regexp = {collect_regexp(course)!r}
c.FileNameCollectorPlugin.valid_ext = [".py"]
'''


def prepare(*, directory: Path, assignment: str) -> dict[str, str]:
    """Give every submitted/<student>/<assignment>/ the released notebook where it has no readable one.

    nbgrader skips a submission without the notebook (students hand in .py files); a notebook
    a student kept is left as it is, since autograde runs the released cells anyway
    (grader.gradebook.released). Returns student -> "supplied", "replaced" (unreadable) or "kept"."""
    import nbformat

    released = directory / "release" / assignment / notebook_name(assignment)
    if not released.is_file():
        raise ConfigError(f"{released}: no such file (run `nbgrader generate_assignment {assignment}` in "
                          f"{directory} first)")
    submitted = directory / "submitted"
    if not submitted.is_dir():
        raise ConfigError(f"{submitted}: no such folder (collect the submissions first)")
    states = {}
    for folder in sorted(p for p in submitted.iterdir() if (p / assignment).is_dir()):
        target = folder / assignment / released.name
        try:
            # a link could point anywhere: it is replaced, never written through
            state = "kept" if not target.is_symlink() and nbformat.read(str(target), as_version=4).cells else ""
        except FileNotFoundError:
            state = "supplied"
        except Exception:  # not a notebook nbformat can read, whatever the reason
            state = ""
        if state != "kept":
            state = state or "replaced"
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            target.unlink(missing_ok=True)
            shutil.copyfile(released, target)
        states[folder.name] = state
    return states
