"""nbgrader_config.py for the course directory that `grade nbgrader` writes, and what students' config needs.

The config names the course (`CourseDirectory.course_id`) and the exchange (`Exchange.root`),
without which `nbgrader release_assignment`, `collect`, and the students' `fetch_assignment`
and `submit` refuse to run; it tells the kernel that autograde starts which course.toml to
grade with (an environment variable, so that no notebook carries a path of the instructor's);
and it sets what grader.gradebook.course relies on: autograde keeps the students' .py files,
runs the released cells only (grader.gradebook.released), imports nothing from a submission's
folder, and zip_collect collects only the course's files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grader.course import Course
from grader.course_table import ConfigError
from grader.gradebook.cells import COURSE_VARIABLE

_COURSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def tree_files(course: Course, assignment: str) -> list[str]:
    """The files of a submission tree for `assignment`, relative to it: every package it stages."""
    return [f"{a.name}/{name}" for a in course.closure(assignment) for name in ("__init__.py", *a.files)]


def course_id(course: Course, given: str | None = None) -> str:
    """nbgrader's course id: `given`, else the course's name in lower case, words joined by '-'.

    It names a folder of the exchange and is split from a student's name at '+': letters, digits,
    '_', '.' and '-' only."""
    value = given if given is not None else "-".join(re.findall(r"[a-z0-9]+", course.name.lower()))
    if not _COURSE_ID.fullmatch(value):
        what = f"--course-id: {given!r}" if given is not None else f"[course] name {course.name!r}"
        raise ConfigError(f"{what}: nbgrader's course id needs 1 to 64 letters, digits, '_', '.' or '-', "
                          "starting with a letter or digit (pass --course-id)")
    return value


def student_settings(*, course_id: str, exchange: Path) -> str:
    """The two lines every student's nbgrader config needs for fetch_assignment and submit (on a
    shared server: /etc/jupyter/nbgrader_config.py)."""
    return f"c.CourseDirectory.course_id = {course_id!r}\nc.Exchange.root = {str(exchange)!r}\n"


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


def config_text(*, course: Course, timeout: float, course_id: str, exchange: Path | None) -> str:
    """nbgrader_config.py; `exchange` None: the folder `exchange/` beside it."""
    exclude = {name: tree_files(course, name) for name in course.assignments}
    sanitize = ["grader.gradebook.released.ReleasedCellsOnly", *(
        f"nbgrader.preprocessors.{name}" for name in
        ("ClearOutput", "DeduplicateIds", "OverwriteKernelspec", "OverwriteCells", "CheckCellMetadata"))]
    root = 'os.path.join(HERE, "exchange")' if exchange is None else repr(str(exchange))
    return f'''"""nbgrader's settings for {course.name}, written by `grade nbgrader` from {course.path.name}.

Written again, whole, each time `grade nbgrader` writes this folder: change the course id or
the exchange with `grade nbgrader --course-id ID --exchange PATH`, and keep other settings of
your own in ~/.jupyter/nbgrader_config.py (this file, read last, wins where both set one). Run
nbgrader from this folder with the kit's Python environment active: the gradebook needs
`alembic` on PATH, and the notebooks' kernel (the Python that runs nbgrader) needs the kit.
"""

import os

c = get_config()  # noqa: F821 (defined by nbgrader's config loader)
HERE = os.path.dirname(os.path.abspath(__file__))

# release_assignment, collect and release_feedback go through the exchange; students' fetch_assignment
# and submit need the same two settings in their nbgrader config (`grade nbgrader` prints them). The
# exchange must exist and, on a shared server, be writable by every student.
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {root}

# The kernel that autograde starts grades with this course.toml (both tiers): the notebooks, which
# students get, name no path of yours (grader.gradebook.cells).
os.environ[{COURSE_VARIABLE!r}] = {str(course.path.resolve())!r}

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
c.ReleasedCellsOnly.release_directory = os.path.join(HERE, "release")

# nbgrader zip_collect: one archive per student, named <student_id>_<anything>.zip, holding the
# submission's assignmentN/ folders; only the course's .py files are collected.
c.FileNameCollectorPlugin.named_regexp = {collect_regexp(course)!r}
c.FileNameCollectorPlugin.valid_ext = [".py"]
'''
