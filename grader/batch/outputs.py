"""What a batch writes: per-student JSON, feedback (text and HTML) and Gradescope results, the class's CSV.

Every file is written whole or not at all (a temporary file renamed into place), so an
interrupted batch leaves only finished reports behind, and a resumed one trusts them.
Standard library only (the HTML aside, grader.batch.html): the reports are plain JSON from the workers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import tempfile
from enum import StrEnum
from pathlib import Path

from grader import words
from grader.batch import safe
from grader.batch.late import column
from grader.course import Assignment
from grader.render import review
from grader.report_json import Graded, from_json, graded
from grader.results import ComponentResult, Reason, Status, Tier

FAULTS = (Reason.CRASH, Reason.TIMEOUT, Reason.TAMPER)


class RowStatus(StrEnum):
    """A batch row's status (the report's "batch" record, grades.csv's status column). A member
    equals its string: the files read the same."""

    GRADED = "graded"  # ran to the end
    # the submission's process crashed, hung or broke the protocol at least once; points earned
    # before are kept
    FAULT = "fault"
    EMPTY = "empty"
    UNREADABLE = "unreadable"
    REFUSED = "refused"  # a symbolic link where grading would read
    GRADER_ERROR = "grader_error"


STATUSES = tuple(RowStatus)
NAME_BYTES = 80  # of a student's file names, before the digest (write_atomic adds about 20 more)


def safe_name(student: str) -> str:
    """The name of a student's files: the student's name where it is a safe file name as it is, else
    that name made safe plus a digest of the exact name. Two students whose names differ only where
    they are made safe ("ivy x", "ivy_x") keep files of their own, and a student's file name is the
    same in every run, whoever else is in the class (a resumed batch finds it). A long name is
    shortened (to NAME_BYTES of UTF-8, within any file system's 255) before its digest: the exact
    name is in the files (the report's "batch" record)."""
    safe = re.sub(r"[^\w.@+-]", "_", student) or "_"
    if safe.startswith("."):  # no hidden files (nor `..`)
        safe = "_" + safe[1:]
    if safe == student and len(safe.encode()) <= NAME_BYTES:
        return student
    while len(safe.encode()) > NAME_BYTES:
        safe = safe[:-1]
    return f"{safe}-{hashlib.sha256(student.encode(errors='surrogatepass')).hexdigest()[:10]}"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def status_of(report: dict) -> RowStatus:
    faulted = any(t.outcome.reason in FAULTS for c in from_json(report).components for t in c.checks)
    return RowStatus.FAULT if faulted else RowStatus.GRADED


def empty_report(spec: Assignment, submission: str, status: str, message: str) -> dict:
    """The JSON report of a submission that could not be graded: every component 0."""
    return {"assignment": spec.name, "submission": submission, "score": 0.0, "max_score": spec.max_score,
            "duration_seconds": 0.0, "isolation": "", "notes": [message],
            "components": [{"name": c.name, "file": c.file, "score": 0.0, "max_score": c.points, "status": status,
                            "tests": [], "forbidden": [], "flagged": []} for c in spec.components]}


def read_student(out: Path, student: str) -> dict | None:
    try:
        return json.loads((out / "reports" / f"{safe_name(student)}.json").read_text())
    except (OSError, ValueError):
        return None


def gradescope(report: dict) -> dict:
    """Gradescope's results.json: one test per component; hidden checks only as counts."""
    doc = graded(report)
    tests = []
    for number, c in enumerate(doc.report.components, 1):
        held = doc.held(c)
        tests.append({"name": c.name, "number": str(number), "score": c.score, "max_score": c.max_score,
                      "status": Status.PASSED if c.score >= c.max_score else Status.FAILED,
                      "output": safe.inert("\n".join(_gradescope_lines(c, doc, held)), lines=True),
                      "visibility": "visible",
                      # the points held for review, as data (Gradescope keeps a test's extra_data)
                      **({"extra_data": {"held": held}} if held is not None else {})})
    notes = [*doc.notes, *([doc.batch["message"]] if doc.batch.get("message") else [])]  # the notes' words
    return {"score": doc.total, "execution_time": doc.report.duration,
            "output": safe.inert("\n".join(notes), lines=True),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _gradescope_lines(c: ComponentResult, doc: Graded, held: float | None) -> list[str]:
    # as much of a diagnosis as course.toml [feedback] reveal allows (none with "check")
    said = words.diagnosis(c.diagnosis, doc.report.reveal)
    lines = [f"Diagnosis: {said}"] if said else []
    if held is not None:  # a flag holds its points for review
        lines[:0] = [review.flagged(held), *(f"- {review.finding(f)}" for f in c.flagged)]
    if (o := doc.overrides.get(c.name)) is not None:
        lines.insert(0, f"Override: {o.points:g} points instead of the {o.graded:g} graded"
                        + (f": {o.reason}" if o.reason else ""))
    secret = [t for t in c.checks if t.tier == Tier.HIDDEN]
    for t in c.checks:
        if t.tier != Tier.HIDDEN and t.outcome.status != Status.PASSED:
            lines.append(f"{t.outcome.status}: {t.id}: {t.outcome.message}".strip())
    if secret:
        passed = sum(t.outcome.status == Status.PASSED or bool(t.excused_by) for t in secret)
        lines.append(f"hidden checks passed: {passed} of {len(secret)}")
    return lines


def write_csv(path: Path, spec: Assignment, rows: list[tuple[str, Graded]]) -> None:
    """grades.csv: student, one column per component (course.toml order), total, status, lms_id (the
    LMS's id of the student, from a Canvas or Moodle download; else empty), overrides (the components
    whose points an override set), isolation (the tier the submission ran in: grader.sandbox.isolation),
    student_id (the roster's: grader.batch.roster), late and late_penalty (grader.batch.late.column), held
    (the components whose points are held for review, as `Name=points`: they count 0 in their column and
    the total until an override releases them, and a sheet that shows the 0 alone would read as failed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", *(c.name for c in spec.components), "total", "status", "lms_id", "overrides",
                     "isolation", "student_id", "late", "late_penalty", "held"])
    for student, doc in rows:
        got = {c.name: c.score for c in doc.report.components}
        writer.writerow([safe.cell(student), *(f"{got.get(c.name, 0.0):g}" for c in spec.components),
                         f"{doc.total:g}", doc.status, safe.cell(doc.batch.get("lms_id", "")),
                         " ".join(c.name for c in doc.report.components if c.name in doc.overrides),
                         doc.report.isolation or "", safe.cell(doc.batch.get("student_id", "")),
                         *column(doc), held_column(doc)])
    write_atomic(path, buffer.getvalue())


def held_column(doc: Graded) -> str:
    """grades.csv's `held`: "LayerNorm=6 ..." for each component whose points are held for review (not
    released by an override), the points it earned and is held at 0 for."""
    return " ".join(f"{c.name}={held:g}" for c in doc.report.components if (held := doc.held(c)) is not None)
