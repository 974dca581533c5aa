"""Grading on a Dask distributed cluster: the course travels once, each submission as its files.

A Dask worker needs the kit installed (`pip install "transformer-course-kit[instructor]"` with
torch), nothing else: the course (course.toml, the suites, the reference) is packed here,
sent to every worker once and unpacked there into a cache folder; each task carries one
submission's graded files and returns the same record a local worker does. Tasks grade in
the worker's process, one at a time (grader.batch.worker), in the same sandbox as locally.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from grader import imports
from grader.batch import collect
from grader.course import Course
from grader.course_table import ConfigError

_UNPACKED: dict[str, Path] = {}


def pack_course(course: Course) -> bytes:
    """The course as a tar: course.toml, the reference as `reference/`, and the suites with every
    module they import (the kit's `tests.strategies`, `tests.grading.helpers`, ...) at their places
    under the folder their package is imported from, so that a worker with only the kit
    installed imports them as the grader here does."""
    root = imports.import_root(course.suites)
    suites = course.suites.resolve().relative_to(root)
    text = course.path.read_text()
    text = re.sub(r"^(reference|assignments|suites)\s*=.*\n", "", text, flags=re.M)
    text = re.sub(r"^\[course\]\s*\n", f'[course]\nreference = "reference"\nassignments = "assignments"\n'
                                        f'suites = "{suites.as_posix()}"\n', text, count=1, flags=re.M)
    code = [p for p in course.suites.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files = {p.relative_to(root): p for p in imports.closure(code, root)}
    if course.reference.is_dir():
        files.update({Path("reference") / p.relative_to(course.reference): p for p in course.reference.rglob("*")
                      if p.is_file() and "__pycache__" not in p.parts})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = text.encode()
        info = tarfile.TarInfo("course.toml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for name in sorted(files):
            tar.add(files[name], name.as_posix())
    return buffer.getvalue()


def submission_files(tree: Path, course: Course, assignment: str) -> dict[str, bytes]:
    """The files grading reads from `tree` (what the sandbox would stage), by relative path."""
    files = {}
    for a in course.closure(assignment):
        for name in ["__init__.py", *a.files]:
            path = tree / a.name / name
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= 1 << 20:
                files[f"{a.name}/{name}"] = path.read_bytes()
    return files


def _course_here(blob: bytes) -> Path:
    key = hashlib.sha256(blob).hexdigest()
    if key not in _UNPACKED:
        folder = Path(tempfile.mkdtemp(prefix=f"grade-course-{key[:12]}-"))
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(folder, filter="data")
            else:  # Python before 3.11.4 (Debian 12's 3.11.2) has no filters: what "data" refuses here
                for member in tar.getmembers():
                    if not (member.isfile() or member.isdir()) or member.name.startswith("/") or \
                            ".." in Path(member.name).parts:
                        raise ValueError(f"the course's archive holds {member.name!r}: a file or folder inside it")
                tar.extractall(folder)
        _UNPACKED[key] = folder / "course.toml"
    return _UNPACKED[key]


def grade_files(course_blob: bytes, assignment: str, student: str, files: dict[str, bytes],
                require_namespaces: bool) -> dict:
    """A Dask task: grade one submission given as its files; the record of grader.batch.worker."""
    from grader.batch import worker

    course_path = _course_here(course_blob)
    tree = Path(tempfile.mkdtemp(prefix="grade-submission-"))
    try:
        for rel, data in files.items():
            path = tree / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return worker.grade_tree(course_path=course_path, assignment=assignment, tree=tree, student=student,
                                 require_namespaces=require_namespaces)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def grade_on_cluster(address: str, course: Course, assignment: str, entries: list[collect.Entry],
                     require_namespaces: bool) -> Iterator[tuple[collect.Entry, dict]]:
    from distributed import Client, as_completed

    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as e:
        raise ConfigError(f"--scheduler: cannot reach a Dask scheduler at {address!r} ({e})") from None
    with client:
        blob = client.scatter(pack_course(course), broadcast=True)
        futures = {}
        for entry in entries:
            assert entry.tree is not None
            files = submission_files(entry.tree, course, assignment)
            futures[client.submit(grade_files, blob, assignment, entry.student, files, require_namespaces,
                                  pure=False, retries=1)] = entry
        try:
            for future in as_completed(futures):
                entry = futures[future]
                try:
                    result = future.result()
                except Exception as e:  # the worker died or the task could not run: a row all the same
                    result = {"error": f"the Dask task failed: {type(e).__name__}: {e}"[:500]}
                yield entry, result
        finally:
            client.cancel(list(futures))
