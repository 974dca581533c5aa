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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grader.batch import collect, outputs, similarity, summary
from grader.course import ConfigError, Course

GRADER_DIR = Path(__file__).resolve().parent.parent
# in a local pool's worker process: a grade is under way; the batch has ended it (see _end_worker)
_grading = False
_ending = False


@dataclass
class Batch:
    rows: list[tuple[str, dict]] = field(default_factory=list)  # (student, report with "batch")
    graded: int = 0  # graded in this run
    failed: int = 0  # not graded in this run for the grader's own trouble (status grader_error)
    first_error: str = ""  # the message of the first of those
    reused: int = 0  # done by an earlier run, unchanged since
    summary: dict = field(default_factory=dict)


def course_key(course: Course, assignment: str) -> str:
    h = hashlib.sha256(collect.course_fingerprint(course, assignment).encode())
    for path in sorted(GRADER_DIR.rglob("*.py")):  # the grader's own code decides grades too
        h.update(path.read_bytes())
    return h.hexdigest()


def run_batch(*, course: Course, assignment: str, root: Path, out: Path, jobs: int = 1,
              scheduler: str | None = None, unsafe_process_isolation: bool = False,
              full_feedback: bool = False, similar: float | None = similarity.THRESHOLD,
              console: Console | None = None, stop: threading.Event | None = None) -> Batch:
    """Grade every submission under `root` for `assignment`; write the outputs into `out`.

    `similar`: list the pairs of submissions that share this fraction of either's code (None: compare
    none); the comparison is of every submission, graded in this run or before.

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
    code: dict[str, dict[str, str]] = {}  # student -> the assignment's files, for similarity
    try:
        for i, source in enumerate(sources):
            entry = collect.prepare(source, course=course, assignment=assignment, work=work / str(i))
            if entry.tree is not None:
                code[entry.student] = similarity.read(entry.tree, assignment, spec.files)
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
            outputs.write_student(out, entry.student, record)
            records[entry.student] = {**record["report"], "batch": record["batch"]}

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
    if similar is not None and batch.rows:
        batch.summary["similarity"] = similarity.of_class(course, assignment, code, threshold=similar)
    return batch



def _locally(course: Course, assignment: str, entries: list[collect.Entry],
             jobs: int) -> Iterator[tuple[collect.Entry, dict]]:
    """Grade on `jobs` worker processes; a worker that dies costs its submission one retry."""
    tries = {id(e): 0 for e in entries}
    queue = list(entries)
    while queue:
        executor = ProcessPoolExecutor(max_workers=min(jobs, len(queue)), initializer=_start_worker,
                                       mp_context=multiprocessing.get_context("spawn"))
        running: dict[Future, collect.Entry] = {}
        try:
            with _workers_starting():  # submit starts them
                for entry in queue:
                    assert entry.tree is not None
                    tries[id(entry)] += 1
                    running[executor.submit(_grade, course_path=course.path, assignment=assignment,
                                            tree=entry.tree, student=entry.student, require_namespaces=False)] = entry
            queue = []
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    entry = running.pop(future)
                    failure = future.exception()
                    if isinstance(failure, BrokenProcessPool) and tries[id(entry)] < 2:
                        queue.append(entry)
                        continue
                    yield entry, _result(future, failure)
        except BaseException:  # interrupted: end the submissions in progress (their sandboxes close)
            _terminate(executor)
            raise
        executor.shutdown(wait=True)


def _result(future: Future, failure: BaseException | None) -> dict:
    if isinstance(failure, BrokenProcessPool):
        return {"error": "the grader's worker process died twice grading this submission"}
    return future.result()


@contextmanager
def _workers_starting() -> Iterator[None]:
    """Ctrl-C held back while the pool starts its workers (in submit). SIGINT is blocked in this
    thread, and the workers inherit the mask: it cannot interrupt one before it ignores SIGINT
    (_start_worker), where it would print a traceback. This process's own handler runs after the
    block (a KeyboardInterrupt in the midst of a start would leave a worker that _terminate does not
    know of, to fail with a traceback once the batch is gone)."""
    held: list[tuple] = []
    handler = signal.getsignal(signal.SIGINT)
    handler = handler if callable(handler) and threading.current_thread() is threading.main_thread() else None
    if handler is not None:
        signal.signal(signal.SIGINT, lambda *args: held.append(args))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
            if held:
                handler(*held[0])


def _start_worker() -> None:
    """Initializer of a local pool's worker: grader.batch.worker's, then the batch's rule for SIGTERM."""
    # until the worker has started there is nothing to close: SIGTERM (the batch interrupted) ends it at
    # once, where a KeyboardInterrupt in the midst of an import (torch's, numpy's) can turn into another
    # error, and any exception out of an initializer is logged with a traceback
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    # what start_pool_worker imports, imported here under that rule (it ends SIGTERM as KeyboardInterrupt)
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401

    import grader.suite.plugin  # noqa: F401
    from grader.batch import worker

    try:
        worker.start_pool_worker()
        signal.signal(signal.SIGTERM, _end_worker)
        # blocked by the batch while it started this process (_workers_starting); ignored since start_pool_worker
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except (KeyboardInterrupt, SystemExit):
        os._exit(0)


def _end_worker(signum, frame) -> None:
    """SIGTERM in a pool's worker, sent by _terminate. A grade under way ends as an interrupt (its
    sandbox closes on the way out; a later SIGTERM, the pool's own once it sees a worker gone, must
    not cut that short); an idle worker, waiting for work, exits quietly (a KeyboardInterrupt there
    would print a traceback)."""
    global _ending
    if not _grading:
        raise SystemExit(0)
    if not _ending:
        _ending = True
        raise KeyboardInterrupt


def _grade(**kwargs) -> dict:
    """A pool worker's task: grader.batch.worker.grade_tree, none once the batch has ended the worker
    (submissions already queued to it would be graded in full, and waited for)."""
    global _grading
    from grader.batch import worker

    if _ending:
        return {"error": "the batch was interrupted"}
    _grading = True
    try:
        return worker.grade_tree(**kwargs)
    finally:
        _grading = False


def _terminate(executor: ProcessPoolExecutor) -> None:
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            os.kill(p.pid, signal.SIGTERM)  # see _end_worker
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
