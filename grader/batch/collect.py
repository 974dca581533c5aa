"""Find a class's submissions in a folder: one folder or zip per student, or nbgrader's layout.

Accepted, per student (the student's name is the folder's or the zip's name):
- a tree as `grade --submission` takes it: `NAME/assignment1/layer_norm.py`, ...;
- the assignment's files directly in the folder: `NAME/layer_norm.py`, ...;
- either of those inside one wrapping folder, as zips often are: `NAME.zip:NAME/assignment1/...`;
- nbgrader's `submitted/NAME/assignmentN/` (DIR may be the course folder or `submitted/` itself),
  whose folder holds the tree.
Nothing here runs a submission's code; zips are unpacked with limits on size and count. Nothing
here reads outside a student's folder or zip either: a symbolic link on the way to a file that
grading reads (the student's folder itself included) refuses the submission (problem "refused")
rather than grade a classmate's files or the reference's under this student's name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from grader.batch.outputs import RowStatus
from grader.course import Assignment, Course
from grader.course_table import ConfigError

MAX_ZIP_BYTES = 64 << 20  # unpacked, per submission
MAX_ZIP_FILES = 2000
# files and folders that are never a student's submission
IGNORED = {"__MACOSX", "__pycache__", ".ipynb_checkpoints", ".DS_Store", ".git"}


@dataclass
class Entry:
    """One student's submission: where it came from and, once unpacked, the tree to grade."""

    student: str
    source: Path
    tree: Path | None = None  # None: nothing gradable (see `problem`)
    problem: str = ""  # a RowStatus: EMPTY, UNREADABLE or REFUSED, with `message`
    message: str = ""
    fingerprint: str = ""  # of the files graded (or of the zip): unchanged -> not regraded on resume


def find(root: Path, course: Course, assignment: str) -> list[Path]:
    """The submissions under `root`, sorted by student name."""
    if not root.is_dir():
        raise ConfigError(f"DIR: {str(root)!r} is not a directory")
    if (root / "submitted").is_dir():
        root = root / "submitted"
    # links too: each gets a row that says it was refused (prepare), rather than no row at all
    entries = [p for p in root.iterdir()
               if p.name not in IGNORED and not p.name.startswith(".")
               and (p.is_dir() or _is_zip(p) and (p.is_file() or p.is_symlink()))]
    if not entries:
        raise ConfigError(f"DIR: {str(root)!r} holds no submissions (one folder or .zip per student)")
    names: dict[str, Path] = {}
    for p in sorted(entries):
        name = student_name(p)
        if name in names:
            raise ConfigError(f"DIR: two submissions for student {name!r}: {names[name].name} and {p.name}")
        names[name] = p
    return [names[n] for n in sorted(names)]


def student_name(source: Path) -> str:
    return source.stem if _is_zip(source) else source.name


def _is_zip(path: Path) -> bool:
    return path.suffix.lower() == ".zip" and not path.is_dir()


class LinkFound(Exception):
    """A symbolic link met on the way to what grading reads."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self.path = path


def prepare(source: Path, *, course: Course, assignment: str, work: Path) -> Entry:
    """Unpack (zips) and locate the tree of one submission; `work` is this student's scratch folder."""
    entry = Entry(student_name(source), source)
    if source.is_symlink():
        return _refuse(entry, source, source.parent)
    folder = source
    if source.is_file():
        try:
            folder = unzip(source, work / "unzipped")
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError) as e:
            entry.problem, entry.message = RowStatus.UNREADABLE, f"{source.name}: not a readable zip ({e})"
            entry.fingerprint = _digest_file(source)
            return entry
    spec = course.assignment(assignment)
    try:
        tree = _locate(folder, course, spec, work / "flat")
    except LinkFound as link:
        return _refuse(entry, link.path, folder)
    if tree is None:
        entry.problem = RowStatus.EMPTY
        entry.message = f"no files of {assignment} found ({', '.join(spec.files)})"
        entry.fingerprint = hashlib.sha256(b"empty").hexdigest()
        return entry
    entry.tree = tree
    entry.fingerprint = fingerprint(tree, course, assignment)
    return entry


def _refuse(entry: Entry, link: Path, top: Path) -> Entry:
    entry.problem = RowStatus.REFUSED
    entry.message = (f"{link.relative_to(top).as_posix()} is a symbolic link (to {os.readlink(link)}); "
                     "submissions must be regular files and folders, not links")
    entry.fingerprint = hashlib.sha256(f"refused\0{entry.message}".encode()).hexdigest()
    return entry


def unzip(path: Path, into: Path) -> Path:
    """Extract the zip at `path` into `into`, within the size and count limits; raises ValueError past them."""
    with zipfile.ZipFile(path) as z:
        members = [m for m in z.infolist() if not m.is_dir()]
        if len(members) > MAX_ZIP_FILES:
            raise ValueError(f"{len(members)} files, more than {MAX_ZIP_FILES}")
        total = sum(m.file_size for m in members)
        if total > MAX_ZIP_BYTES:
            raise ValueError(f"{total >> 20} MiB unpacked, more than {MAX_ZIP_BYTES >> 20} MiB")
        into.mkdir(parents=True, exist_ok=True)
        for m in members:
            # ZipFile.extract drops absolute paths and `..` parts, and writes links as plain files
            z.extract(m, into)
    return into


def skip_wrappers(folder: Path, known: set[str]) -> Path:
    """The first folder below `folder` that is not a lone wrapper folder (as LMS downloads add)."""
    while True:
        inside = [p for p in folder.iterdir() if p.name not in IGNORED and not p.name.startswith(".")]
        if len(inside) != 1 or not inside[0].is_dir() or inside[0].name in known:
            return folder
        if inside[0].is_symlink():
            raise LinkFound(inside[0])
        folder = inside[0]


def _locate(folder: Path, course: Course, spec: Assignment, flat: Path) -> Path | None:
    """The tree to grade; raises LinkFound where a link is on the way to a file it holds."""
    top = folder
    known = set(course.assignments)
    folder = skip_wrappers(folder, known)
    nbgrader = folder / spec.name
    if (nbgrader / spec.name).is_dir():  # nbgrader: submitted/NAME/assignmentN/assignmentN/...
        folder = nbgrader
    if any((folder / a.name).is_dir() for a in course.closure(spec.name)):
        _no_links(top, [folder / a.name / name for a in course.closure(spec.name)
                        for name in ["__init__.py", *a.files]])
        return folder
    found = [name for name in spec.files if (folder / name).is_file() or (folder / name).is_symlink()]
    _no_links(top, [folder / name for name in found])
    if not found:
        return None
    # the files of this assignment, handed in without their package folder
    (flat / spec.name).mkdir(parents=True, exist_ok=True)
    for name in found:
        shutil.copyfile(folder / name, flat / spec.name / name)
    return flat


def _no_links(top: Path, paths: list[Path]) -> None:
    """Raise LinkFound for the first link on the way from `top` (a folder of the student's own) to `paths`."""
    for path in paths:
        at = top
        for part in path.relative_to(top).parts:
            at = at / part
            if at.is_symlink():
                raise LinkFound(at)
            if not at.exists():
                break


def fingerprint(tree: Path, course: Course, assignment: str) -> str:
    """A digest of the files grading reads from `tree` (the closure's whitelisted files)."""
    h = hashlib.sha256()
    for a in course.closure(assignment):
        for name in ["__init__.py", *a.files]:
            path = tree / a.name / name
            h.update(f"{a.name}/{name}\0".encode())
            if path.is_file() and not path.is_symlink():
                h.update(path.read_bytes()[: 1 << 21])
            h.update(b"\0")
    return h.hexdigest()


def _digest_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""

