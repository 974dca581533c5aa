"""`grade batch`: grade a class, resumable, on a local pool of workers or a Dask cluster.

Each submission's record lands in OUT as soon as it is graded (grader.batch.outputs), keyed by
a digest of its files and of the course (course.toml, suites, reference, grader): a batch run
again, after an interruption or a crash, grades only what is new or changed. Every submission
gets a row, whatever it did; the grader's own trouble is a row too (status grader_error),
retried by the next run.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grader.batch import collect, outputs, summary
from grader.course import ConfigError, Course

GRADER_DIR = Path(__file__).resolve().parent.parent


@dataclass
class Batch:
    rows: list[tuple[str, dict]] = field(default_factory=list)  # (student, report with "batch")
    graded: int = 0  # graded in this run
    reused: int = 0  # done by an earlier run, unchanged since
    summary: dict = field(default_factory=dict)


def course_key(course: Course, assignment: str) -> str:
    h = hashlib.sha256(collect.course_fingerprint(course, assignment).encode())
    for path in sorted(GRADER_DIR.rglob("*.py")):  # the grader's own code decides grades too
        h.update(path.read_bytes())
    return h.hexdigest()


def run_batch(*, course: Course, assignment: str, root: Path, out: Path, jobs: int = 1,
              scheduler: str | None = None, unsafe_process_isolation: bool = False,
              full_feedback: bool = False, console: Console | None = None,
              stop: threading.Event | None = None) -> Batch:
    """Grade every submission under `root` for `assignment`; write the outputs into `out`.

    `stop`: once set (by a SIGINT handler, say), the batch raises KeyboardInterrupt after the
    submission it is finishing, even where the interrupt itself was lost (a KeyboardInterrupt
    raised inside a finalizer is printed and dropped by Python)."""
    from grader.sandbox import isolation

    console = console or Console(stderr=True)
    spec = course.assignment(assignment)
    sources = collect.find(root, course, assignment)
    if scheduler is None and not unsafe_process_isolation and isolation.choose(course.limits) != "namespaces":
        chosen = os.environ.get(isolation.ENV_VAR)
        why = isolation.unavailable() if chosen != "process" and course.limits.isolation != "process" else (
            f"{isolation.ENV_VAR}={chosen!r}" if chosen else course.limits.where("isolation"))
        raise ConfigError(f"namespaces are not available here ({why}); a batch runs untrusted code, so grading it "
                          "with resource limits only (the submissions can read and write what your user can) "
                          "needs --unsafe-process-isolation")
    out.mkdir(parents=True, exist_ok=True)
    key = course_key(course, assignment)
    work = Path(tempfile.mkdtemp(prefix="grade-batch-"))
    batch = Batch()
    records: dict[str, dict] = {}
    pending: list[collect.Entry] = []
    try:
        for i, source in enumerate(sources):
            entry = collect.prepare(source, course=course, assignment=assignment, work=work / str(i))
            digest = hashlib.sha256(f"{key}:{entry.fingerprint}".encode()).hexdigest()
            done = outputs.read_student(out, entry.student)
            if done and done.get("batch", {}).get("key") == digest and done["batch"]["status"] != "grader_error":
                records[entry.student] = done
                batch.reused += 1
                continue
            meta = {"student": entry.student, "source": str(source), "key": digest}
            if entry.problem:
                report = outputs.empty_report(spec, str(source), entry.problem, entry.message)
                record = {"report": report, "batch": {**meta, "status": entry.problem, "message": entry.message}}
                outputs.write_student(out, entry.student, record)
                records[entry.student] = {**report, "batch": record["batch"]}
                continue
            entry.fingerprint = digest
            pending.append(entry)

        def finish(entry: collect.Entry, result: dict) -> None:
            meta = {"student": entry.student, "source": str(entry.source), "key": entry.fingerprint}
            if "error" in result:
                report = outputs.empty_report(spec, str(entry.source), "grader_error", result["error"])
                record = {"report": report, "batch": {**meta, "status": "grader_error", "message": result["error"]}}
            else:
                report = {**result["report"], "submission": str(entry.source)}
                record = {"report": report, "batch": {**meta, "status": outputs.status_of(report), "message": ""},
                          "feedback": result["feedback_full" if full_feedback else "feedback"]}
            outputs.write_student(out, entry.student, record)
            records[entry.student] = {**record["report"], "batch": record["batch"]}
            batch.graded += 1

        if pending:
            progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("{task.fields[now]}"), console=console,
                                transient=False)
            with progress:
                task = progress.add_task(f"grading {assignment}", total=len(pending), now="")
                results = (_on_cluster(scheduler, course, assignment, pending, not unsafe_process_isolation)
                           if scheduler else _locally(course, assignment, pending, jobs))
                for entry, result in results:
                    finish(entry, result)
                    progress.update(task, advance=1, now=entry.student)
                    if stop is not None and stop.is_set():
                        raise KeyboardInterrupt
    finally:
        shutil.rmtree(work, ignore_errors=True)
        # whatever happened, the class's files show every submission graded so far
        batch.rows = [(s, records[s]) for s in sorted(records)]
        if batch.rows:
            outputs.write_csv(out / "grades.csv", spec, batch.rows)
            batch.summary = summary.summarise(spec, batch.rows)
    return batch


def _locally(course: Course, assignment: str, entries: list[collect.Entry],
             jobs: int) -> Iterator[tuple[collect.Entry, dict]]:
    """Grade on `jobs` worker processes; a worker that dies costs its submission one retry."""
    from grader.batch import worker

    tries = {id(e): 0 for e in entries}
    queue = list(entries)
    while queue:
        executor = ProcessPoolExecutor(max_workers=min(jobs, len(queue)), initializer=worker.start_pool_worker,
                                       mp_context=multiprocessing.get_context("spawn"))
        running: dict[Future, collect.Entry] = {}
        try:
            for entry in queue:
                assert entry.tree is not None
                tries[id(entry)] += 1
                running[executor.submit(worker.grade_tree, course_path=course.path, assignment=assignment,
                                        tree=entry.tree, student=entry.student, require_namespaces=False)] = entry
            queue = []
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    entry = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        if tries[id(entry)] < 2:
                            queue.append(entry)
                            continue
                        result = {"error": "the grader's worker process died twice grading this submission"}
                    yield entry, result
        except BaseException:  # interrupted: end the submissions in progress (their sandboxes close)
            _terminate(executor)
            raise
        executor.shutdown(wait=True)


def _terminate(executor: ProcessPoolExecutor) -> None:
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            os.kill(p.pid, signal.SIGTERM)  # the worker turns it into KeyboardInterrupt
        except (ProcessLookupError, TypeError):
            pass
    for p in processes:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()


def _on_cluster(address: str, course: Course, assignment: str, entries: list[collect.Entry],
                require_namespaces: bool) -> Iterator[tuple[collect.Entry, dict]]:
    from distributed import Client, as_completed

    from grader.batch import cluster

    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as e:
        raise ConfigError(f"--scheduler: cannot reach a Dask scheduler at {address!r} ({e})") from None
    with client:
        blob = client.scatter(cluster.pack_course(course), broadcast=True)
        futures = {}
        for entry in entries:
            assert entry.tree is not None
            files = cluster.submission_files(entry.tree, course, assignment)
            futures[client.submit(cluster.grade_files, blob, assignment, entry.student, files, require_namespaces,
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
