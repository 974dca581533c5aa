"""`grade batch`: grade a class, resumable, on a local pool of workers or a Dask cluster.

Each submission's record lands in OUT as soon as it is graded (grader.batch.outputs), keyed by
a digest of its files and of the course (course.toml, suites, reference, grader): a batch run
again, after an interruption or a crash, grades only what is new or changed. Every submission
gets a row, whatever it did; the grader's own trouble is a row too (status grader_error),
retried by the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grader.batch import cluster, collect, html, lms, outputs, pool, regrade, safe, similarity, summary
from grader.course import ConfigError, Course

OVERRIDES = "overrides.csv"  # in OUT: the overrides that every later run applies


@dataclass
class Batch:
    rows: list[tuple[str, dict]] = field(default_factory=list)  # (student, report with "batch")
    graded: int = 0  # graded in this run
    failed: int = 0  # not graded in this run for the grader's own trouble (status grader_error)
    first_error: str = ""  # the message of the first of those
    reused: int = 0  # done by an earlier run, unchanged since
    summary: dict = field(default_factory=dict)
    changes: list[dict] | None = None  # what changed since the run OUT held (None: OUT held none)


def course_key(course: Course, assignment: str) -> str:
    return key_of(regrade.course_digests(course))


def key_of(digests: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


def run_batch(*, course: Course, assignment: str, root: Path, out: Path, jobs: int = 1,
              scheduler: str | None = None, unsafe_process_isolation: bool = False,
              full_feedback: bool = False, similar: float | None = similarity.THRESHOLD,
              overrides: Path | None = None, console: Console | None = None,
              stop: threading.Event | None = None) -> Batch:
    """Grade every submission under `root` for `assignment`; write the outputs into `out`.

    `similar`: list the pairs of submissions that share this fraction of either's code (None: compare
    none); the comparison is of every submission, graded in this run or before.

    `stop`: once set (by a SIGINT handler, say), the batch raises KeyboardInterrupt after the
    submission it is finishing, even where the interrupt itself was lost (a KeyboardInterrupt
    raised inside a finalizer is printed and dropped by Python).

    `overrides`: a CSV of student,component,points,reason (grader.batch.regrade), copied into OUT
    as overrides.csv; without it, OUT's overrides.csv (an earlier run's) applies, if any."""
    from grader.sandbox import isolation

    console = console or Console(stderr=True)
    spec = course.assignment(assignment)
    work = Path(tempfile.mkdtemp(prefix="grade-batch-"))
    try:
        root, lms_ids = lms.stage(root, work / "lms")  # a Canvas or Moodle download: a folder per student
        sources = collect.find(root, course, assignment)
        kept = out / OVERRIDES
        granted = regrade.load_overrides(overrides or kept, spec, {collect.student_name(s) for s in sources}) \
            if overrides or kept.is_file() else {}
        tier = isolation.choose(course.limits) if scheduler is None and not unsafe_process_isolation else ""
        exposed = isolation.protects_course(tier, [course.reference, course.suites]) if tier else ""
        if exposed:
            chosen = os.environ.get(isolation.ENV_VAR)
            why = isolation.unavailable() if chosen != "process" and course.limits.isolation != "process" else (
                f"{isolation.ENV_VAR}={chosen!r}" if chosen else course.limits.where("isolation"))
            raise ConfigError(f"the submissions could read the course here: {exposed} (namespaces: {why}); a batch "
                              "runs untrusted code, so grading it so needs --unsafe-process-isolation")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    out.mkdir(parents=True, exist_ok=True)
    if overrides is not None and overrides.resolve() != kept.resolve():
        outputs.write_atomic(kept, overrides.read_text(encoding="utf-8-sig"))
    digests = regrade.course_digests(course)
    key = key_of(digests)
    batch = Batch()
    before: dict[str, dict] = {}  # student -> the record an earlier run left in OUT
    submitted: dict[str, str] = {}  # student -> the digest of their files
    records: dict[str, dict] = {}
    pending: list[collect.Entry] = []
    code: dict[str, dict[str, str]] = {}  # student -> the assignment's files, for similarity
    try:
        for i, source in enumerate(sources):
            entry = collect.prepare(source, course=course, assignment=assignment, work=work / str(i))
            if entry.tree is not None:
                code[entry.student] = similarity.read(entry.tree, assignment, spec.files)
            digest = hashlib.sha256(f"{key}:{entry.fingerprint}".encode()).hexdigest()
            submitted[entry.student] = entry.fingerprint
            done = outputs.read_student(out, entry.student)
            if done is not None:
                before[entry.student] = done
            if done and done.get("batch", {}).get("key") == digest and done["batch"]["status"] != "grader_error":
                records[entry.student] = done
                batch.reused += 1
                continue
            meta = {"student": entry.student, "source": str(source), "key": digest,
                    "digests": {"submission": entry.fingerprint, **digests},
                    **({"lms_id": lms_ids[entry.student]} if entry.student in lms_ids else {})}
            if entry.problem:
                report = outputs.empty_report(spec, str(source), entry.problem, entry.message)
                record = {"report": report, "batch": {**meta, "status": entry.problem, "message": entry.message}}
                write_student(out, entry.student, record)
                records[entry.student] = {**report, "batch": record["batch"]}
                continue
            entry.fingerprint = digest
            pending.append(entry)

        def finish(entry: collect.Entry, result: dict) -> None:
            meta = {"student": entry.student, "source": str(entry.source), "key": entry.fingerprint,
                    "digests": {"submission": submitted[entry.student], **digests},
                    **({"lms_id": lms_ids[entry.student]} if entry.student in lms_ids else {})}
            if "error" in result:
                report = outputs.empty_report(spec, str(entry.source), "grader_error", result["error"])
                record: dict = {"report": report,
                                 "batch": {**meta, "status": "grader_error", "message": result["error"]}}
                batch.failed += 1
                batch.first_error = batch.first_error or result["error"]
            else:
                report = {**result["report"], "submission": str(entry.source)}
                full = "_full" if full_feedback else ""
                record = {"report": report, "batch": {**meta, "status": outputs.status_of(report), "message": ""},
                          "feedback": result[f"feedback{full}"], "feedback_html": result.get(f"feedback{full}_html")}
                batch.graded += 1
            write_student(out, entry.student, record)
            records[entry.student] = {**record["report"], "batch": record["batch"]}

        if pending:
            progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("{task.fields[now]}", markup=False), console=console,
                                transient=False)
            with progress:
                task = progress.add_task(f"grading {assignment}", total=len(pending), now="")
                results = (cluster.grade_on_cluster(scheduler, course, assignment, pending,
                                                    not unsafe_process_isolation)
                           if scheduler else pool.grade_locally(course, assignment, pending, jobs))
                for entry, result in results:
                    finish(entry, result)
                    progress.update(task, advance=1, now=safe.inert(entry.student))
                    if stop is not None and stop.is_set():
                        raise KeyboardInterrupt
    finally:
        shutil.rmtree(work, ignore_errors=True)
        # whatever happened, the class's files show every submission graded so far
        for student in sorted(records):
            record = regrade.apply_overrides(records[student], granted.get(student, {}))
            if record != records[student]:
                regrade.rewrite_overridden(out, student, record)
            batch.rows.append((student, record))
        if batch.rows:
            if before and (out / "grades.csv").is_file():  # the earlier run's grades, kept
                shutil.copyfile(out / "grades.csv", out / "grades.before.csv")
            outputs.write_csv(out / "grades.csv", spec, batch.rows)
            batch.summary = summary.summarise(spec, batch.rows)
            if before:
                batch.changes = regrade.changes(before, batch.rows)
                regrade.write_changes(out / "changes.csv", batch.changes)
                batch.summary["changes"] = {"students": sum(s in before for s, _ in batch.rows),
                                            "totals_changed": sum(abs(c["change"]) > 1e-9 for c in batch.changes),
                                            "rows": batch.changes}
    if similar is not None and batch.rows:
        batch.summary["similarity"] = similarity.of_class(course, assignment, code, threshold=similar)
    return batch


def write_student(out: Path, student: str, record: dict) -> None:
    """`record`: {"report", "batch": {...}, "feedback"?, "feedback_html"?}: the student's files."""
    name = outputs.safe_name(student)
    report = {**record["report"], "batch": record["batch"]}
    if record.get("feedback"):
        outputs.write_atomic(out / "feedback" / f"{name}.txt", record["feedback"])
    if record.get("feedback_html"):
        page = html.student_page(student, report, record["feedback_html"])
        outputs.write_atomic(out / "feedback" / f"{name}.html", page)
    results = json.dumps(outputs.gradescope(report), indent=2) + "\n"
    outputs.write_atomic(out / "gradescope" / name / "results.json", results)
    # last: its presence marks the student done for a resumed batch
    outputs.write_atomic(out / "reports" / f"{name}.json", json.dumps(report, indent=2) + "\n")
