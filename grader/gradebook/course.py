"""Write an nbgrader course directory from course.toml: nbgrader_config.py and source/<assignment>/.

Each source/<assignment>/ is a submission tree as `grade --submission` reads it, plus one
notebook and the public course (grader.gradebook.public):

    source/assignment3/assignment3.ipynb     the notebook nbgrader grades
    source/assignment3/assignment1/*.py      the stubs of every assignment it builds on,
    source/assignment3/assignment2/*.py      so that the folder nbgrader autogrades
    source/assignment3/assignment3/*.py      (autograded/<student>/assignment3/) is the student's tree
    source/assignment3/course.toml, tests/   the public checks: `grade assignment3` works in the
                                             folder a student fetches

The stubs come from the course's `assignments/`, never from `solutions/`: nbgrader releases
.py files as they are; what is written is audited as `grade release` audits a student kit. The
notebook holds a locked introduction, a locked cell that runs the grader on the notebook's
folder in a process of its own (grader.gradebook.cells), and one locked, autograded cell per
component worth that component's points. It names no path: under autograde the kernel finds
the instructor's course.toml in the environment nbgrader_config.py sets (grader.gradebook.config).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from grader.authoring.stubs import BEGIN, END
from grader.course import Assignment, Course
from grader.course_table import ConfigError
from grader.gradebook import config, public
from grader.gradebook.config import tree_files

# grade ids of the cells that are not a component
INTRO, RUN, PERFORMANCE = "grader_intro", "grader_run", "performance"
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# a cell runs one whole grading run: this long, then the student's components score 0
DEFAULT_TIMEOUT = 1800.0


def notebook_name(assignment: str) -> str:
    return f"{assignment}.ipynb"


def performance_points(course: Course, assignment: str) -> float:
    """What the performance tier adds to `assignment`'s score (grader.grading.performance): its grade cell's points."""
    config = course.performance
    timed = config is not None and any(c.name in config.components for c in course.assignment(assignment).components)
    return config.points if config is not None and timed else 0.0


def write_course(*, course: Course, directory: Path, assignments: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, course_id: str | None = None,
                 exchange: Path | None = None) -> list[Path]:
    """Write nbgrader_config.py and source/<assignment>/ for `assignments` (default: all); return the paths.

    Creates the exchange where it is missing (`exchange` None: DIR/exchange/). Existing files of
    the same names are replaced; nothing else in `directory` is touched."""
    from grader.authoring.audit import audit

    names = list(assignments or course.assignments)
    for name in names:
        course.assignment(name)
    if course.assignments_dir.resolve() == course.reference.resolve():
        raise ConfigError(f"{course.path.name}: [course] assignments and reference are the same folder "
                          f"({course.assignments_dir}): the stubs would be the solutions")
    cid = config.course_id(course, course_id)
    # everything is read and checked before anything is written
    sources: dict[str, dict[str, bytes]] = {}
    for name in names:
        files = {rel: _stub(course, rel).encode() for rel in tree_files(course, name)}
        files.update(public.files(course, name))
        files[notebook_name(name)] = _notebook_text(notebook(course=course, assignment=name, timeout=timeout))
        # what students get: no hidden check, solution or marker (grade release's audit)
        with tempfile.TemporaryDirectory(prefix="grade-nbgrader-") as scratch:
            _write_files(Path(scratch), files)
            problems = audit(Path(scratch), course)
        if problems:
            raise ConfigError(f"source/{name}: {problems[0]} ({len(problems)} problem(s); nothing was written)")
        sources[name] = files
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "nbgrader_config.py"]
    written[0].write_text(config.config_text(course=course, timeout=timeout, course_id=cid,
                                             exchange=exchange.resolve() if exchange else None))
    (exchange or directory / "exchange").mkdir(parents=True, exist_ok=True)
    for name, files in sources.items():
        written += _write_files(directory / "source" / name, files)
    return written


def _write_files(folder: Path, files: dict[str, bytes]) -> list[Path]:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return [folder / rel for rel in files]


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
           f"report = cells.run_grader(assignment={assignment!r}, timeout={timeout:g})")
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
            f"process of its own and shows each component's score, and what its most telling failed check "
            f"expected and got. Do not edit it: its cells are restored before grading, and cells you add are "
            f"not run.\n\n"
            f"| component | file | points |\n|---|---|---|\n{rows}\n\n"
            f"Grade as often as you like before you submit: run this notebook, or run `grade {spec.name}` in a "
            f"terminal in this folder (`grade {spec.name} --verbose` shows every failed check in full). Both "
            f"grade with the public checks that came with this notebook (`course.toml`, `tests/`), with the "
            f"`grade` command of the Python environment this notebook runs in. Your instructor also grades "
            f"with hidden checks, on other inputs: a full score here is feedback, not your grade.\n")


def _notebook_text(nb) -> bytes:
    import nbformat

    return nbformat.writes(nb).encode()


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
