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

from grader.batch import cluster, collect, html, late, lms, outputs, pool, regrade, safe, similarity, summary
from grader.batch import roster as rosters
from grader.batch.outputs import RowStatus
from grader.course import Course
from grader.course_table import ConfigError
from grader.report_json import Graded, graded

OVERRIDES = "overrides.csv"  # in OUT: the overrides that every later run applies
ROSTER = "roster.csv"  # in OUT: the roster that every later run (and grade export) uses


@dataclass
class Batch:
    rows: list[tuple[str, Graded]] = field(default_factory=list)  # (student, its report with "batch", read once)
    graded: int = 0  # graded in this run
    failed: int = 0  # not graded in this run for the grader's own trouble (status grader_error)
    first_error: str = ""  # the message of the first of those
    reused: int = 0  # done by an earlier run, unchanged since
    summary: dict = field(default_factory=dict)
    changes: list[dict] | None = None  # what changed since the run OUT held (None: OUT held none)
    not_in_roster: list[str] = field(default_factory=list)  # submissions the roster names no student for
    no_submission: list[str] = field(default_factory=list)  # students of the roster with no submission


def course_key(course: Course, assignment: str) -> str:
    return key_of(regrade.course_digests(course))


def key_of(digests: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


@dataclass
class Options:
    """How a batch grades (`grade batch`'s options). `similar`: list the pairs of submissions that share
    this fraction of either's code (None: compare none), of every submission, graded in this run or
    before. `overrides`: a CSV of student,component,points,reason (grader.batch.regrade), copied into OUT
    as overrides.csv; without it, OUT's overrides.csv (an earlier run's) applies, if any. `roster`: the
    same, kept as roster.csv. `stop`: once
    set (by a SIGINT handler, say), the batch raises KeyboardInterrupt after the submission it is
    finishing, even where the interrupt itself was lost (a KeyboardInterrupt raised inside a finalizer
    is printed and dropped by Python)."""
    jobs: int = 1
    scheduler: str | None = None
    unsafe_process_isolation: bool = False
    full_feedback: bool = False
    similar: float | None = similarity.THRESHOLD
    overrides: Path | None = None
    roster: Path | None = None  # grader.batch.roster, copied into OUT as roster.csv (as overrides are)
    console: Console | None = None
    stop: threading.Event | None = None


def run_batch(*, course: Course, assignment: str, root: Path, out: Path, options: Options | None = None) -> Batch:
    """Grade every submission under `root` for `assignment`; write the outputs into `out`."""
    options = options or Options()
    spec = course.assignment(assignment)
    work = Path(tempfile.mkdtemp(prefix="grade-batch-"))
    kept, kept_roster = out / OVERRIDES, out / ROSTER
    try:
        download = lms.kind_and_late(root)
        root, lms_ids = lms.stage(root, work / "lms")  # a Canvas or Moodle download: a folder per student
        sources = collect.find(root, course, assignment)
        granted = regrade.load_overrides(options.overrides or kept, spec, {collect.student_name(s) for s in sources}) \
            if options.overrides or kept.is_file() else {}
        roster = rosters.load(options.roster) if options.roster else (
            rosters.load(kept_roster, str(kept_roster)) if kept_roster.is_file() else None)
        _refuse_exposed(course, options)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    out.mkdir(parents=True, exist_ok=True)
    for given, keep in ((options.overrides, kept), (options.roster, kept_roster)):
        if given is not None and given.resolve() != keep.resolve():
            outputs.write_atomic(keep, given.read_text(encoding="utf-8-sig"))
    run = _Run(course, assignment, out, options, lms_ids)
    run.roster, (run.lms, run.late_ids) = roster, download
    try:
        for i, source in enumerate(sources):
            run.take(source, work / str(i))
        run.grade_pending()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        run.close(granted)  # whatever happened, the class's files show every submission graded so far
    batch = run.batch
    if options.similar is not None and batch.rows:
        batch.summary["similarity"] = similarity.of_class(course, assignment, run.code, threshold=options.similar,
                                                                 jobs=options.jobs)
    return batch


def _refuse_exposed(course: Course, options: Options) -> None:
    """A ConfigError where the submissions could read the course (its reference, its suites) here."""
    from grader.sandbox import isolation

    unsafe = options.unsafe_process_isolation
    tier = isolation.choose(course.limits) if options.scheduler is None and not unsafe else ""
    exposed = isolation.protects_course(tier, [course.reference, course.suites]) if tier else ""
    if exposed:
        chosen = os.environ.get(isolation.ENV_VAR)
        why = isolation.unavailable() if chosen != "process" and course.limits.isolation != "process" else (
            f"{isolation.ENV_VAR}={chosen!r}" if chosen else course.limits.where("isolation"))
        raise ConfigError(f"the submissions could read the course here: {exposed} (namespaces: {why}); a batch "
                          "runs untrusted code, so grading it so needs --unsafe-process-isolation")


class _Run:
    """One batch run: what OUT held, what each student handed in, what is graded and what is left."""

    def __init__(self, course: Course, assignment: str, out: Path, options: Options, lms_ids: dict[str, str]):
        self.course, self.assignment, self.out, self.options = course, assignment, out, options
        self.spec = course.assignment(assignment)
        self.lms_ids = lms_ids
        self.digests = regrade.course_digests(course)
        self.key = key_of(self.digests)
        self.batch = Batch()
        self.before: dict[str, dict] = {}  # student -> the record an earlier run left in OUT
        self.submitted: dict[str, str] = {}  # student -> the digest of their files
        self.records: dict[str, dict] = {}
        self.pending: list[collect.Entry] = []
        self.code: dict[str, dict[str, str]] = {}  # student -> the assignment's files, for similarity
        self.roster: rosters.Roster | None = None
        self.lms = ""  # the download's LMS ("canvas", "moodle"; "" for folders)
        self.late_ids: set[str] = set()  # the LMS ids whose files Canvas marked _LATE
        self.who: dict[str, str] = {}  # student (folder) -> the roster's student id
        self.lateness: dict[str, late.Lateness | None] = {}

    def _meta(self, student: str, source: str, key: str) -> dict:
        return {"student": student, "source": source, "key": key,
                "digests": {"submission": self.submitted[student], **self.digests},
                **({"lms_id": self.lms_ids[student]} if student in self.lms_ids else {})}

    def take(self, source: Path, work: Path) -> None:
        """One submission: reused where OUT holds its grading, recorded where it cannot be graded (a
        problem of its files), else left to grade."""
        entry = collect.prepare(source, course=self.course, assignment=self.assignment, work=work)
        self._identify(entry.student, source)
        if entry.tree is not None:
            self.code[entry.student] = similarity.read(entry.tree, self.assignment, self.spec.files)
        digest = hashlib.sha256(f"{self.key}:{entry.fingerprint}".encode()).hexdigest()
        self.submitted[entry.student] = entry.fingerprint
        done = outputs.read_student(self.out, entry.student)
        if done is not None:
            self.before[entry.student] = done
        if done and (was := graded(done)).batch.get("key") == digest and was.status != RowStatus.GRADER_ERROR:
            self.records[entry.student] = done
            self.batch.reused += 1
            return
        if entry.problem:
            meta = self._meta(entry.student, str(source), digest)
            report = outputs.empty_report(self.spec, str(source), entry.problem, entry.message)
            batch = {**meta, "status": entry.problem, "message": entry.message}
            write_student(self.out, entry.student, {"report": report, "batch": batch})
            self.records[entry.student] = {**report, "batch": batch}
            return
        entry.fingerprint = digest
        self.pending.append(entry)

    def _identify(self, student: str, source: Path) -> None:
        """The roster's id of the student, and how late the submission was (grader.batch.late)."""
        lms_id = self.lms_ids.get(student, "")
        policy = self.course.late
        self.lateness[student] = late.measure(
            source, due=policy.due.get(self.assignment) if policy else None,
            canvas_late=(lms_id in self.late_ids) if self.lms == "canvas" else None)
        if self.roster is None:
            return
        meta = late.metadata(source) or {}
        users = [u for u in meta.get("users") or [] if isinstance(u, dict)]
        found = self.roster.find(folder=student, lms=self.lms, lms_id=lms_id, users=users)
        if found is None:
            self.batch.not_in_roster.append(student)
        else:
            self.who[student] = found

    def grade_pending(self) -> None:
        """Grade what is left, on the local pool or the cluster, with a progress bar."""
        if not self.pending:
            return
        options = self.options
        progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("{task.fields[now]}", markup=False),
                            console=options.console or Console(stderr=True), transient=False)
        with progress:
            task = progress.add_task(f"grading {self.assignment}", total=len(self.pending), now="")
            results = (cluster.grade_on_cluster(options.scheduler, self.course, self.assignment, self.pending,
                                                not options.unsafe_process_isolation)
                       if options.scheduler else pool.grade_locally(self.course, self.assignment, self.pending,
                                                                    options.jobs))
            for entry, result in results:
                self.finish(entry, result)
                progress.update(task, advance=1, now=safe.inert(entry.student))
                if options.stop is not None and options.stop.is_set():
                    raise KeyboardInterrupt

    def finish(self, entry: collect.Entry, result: dict) -> None:
        """A graded submission's record, written to OUT."""
        meta = self._meta(entry.student, str(entry.source), entry.fingerprint)
        if "error" in result:
            report = outputs.empty_report(self.spec, str(entry.source), RowStatus.GRADER_ERROR, result["error"])
            batch = {**meta, "status": RowStatus.GRADER_ERROR, "message": result["error"]}
            record: dict = {"report": report, "batch": batch}
            self.batch.failed += 1
            self.batch.first_error = self.batch.first_error or result["error"]
        else:
            report = {**result["report"], "submission": str(entry.source)}
            full = "_full" if self.options.full_feedback else ""
            batch = {**meta, "status": outputs.status_of(report), "message": ""}
            record = {"report": report, "batch": batch,
                      "feedback": result[f"feedback{full}"], "feedback_html": result.get(f"feedback{full}_html")}
            self.batch.graded += 1
        write_student(self.out, entry.student, record)
        self.records[entry.student] = {**report, "batch": batch}

    def close(self, granted: dict[str, dict]) -> None:
        """The class's rows with their overrides, grades.csv, the summary and what changed since OUT's run."""
        batch, out = self.batch, self.out
        for student in sorted(self.records):
            record = self.records[student]
            was, mine, lateness = graded(record), granted.get(student, {}), self.lateness.get(student)
            # overrides on the graded points, then the late penalty on that (course.toml [late]); a row that
            # has neither and gets neither is left as it is (most of a class: each step rebuilds its checks)
            if mine or was.overrides or was.late is not None or lateness is not None:
                record = regrade.apply_overrides(late.undo(record), mine)
                record = late.apply(record, lateness, self.course.late)
            batch_record = {k: v for k, v in graded(record).batch.items() if k != "student_id"}
            if student in self.who:
                batch_record["student_id"] = self.who[student]
            record = {**record, "batch": batch_record}
            if record != self.records[student]:
                regrade.rewrite_overridden(out, student, record, self.spec, full=self.options.full_feedback)
            batch.rows.append((student, graded(record)))
        if self.roster is not None:
            batch.no_submission = sorted(set(self.roster.students) - set(self.who.values()))
        if not batch.rows:
            return
        if self.before and (out / "grades.csv").is_file():  # the earlier run's grades, kept
            shutil.copyfile(out / "grades.csv", out / "grades.before.csv")
        outputs.write_csv(out / "grades.csv", self.spec, batch.rows)
        batch.summary = summary.summarise(self.spec, batch.rows)
        if self.roster is not None:
            batch.summary["roster"] = {"not_in_roster": batch.not_in_roster, "no_submission": batch.no_submission}
        if self.before:
            batch.changes = regrade.changes(self.before, batch.rows)
            regrade.write_changes(out / "changes.csv", batch.changes)
            batch.summary["changes"] = {"students": sum(s in self.before for s, _ in batch.rows),
                                        "totals_changed": sum(abs(c["change"]) > 1e-9 for c in batch.changes),
                                        "rows": batch.changes}


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
