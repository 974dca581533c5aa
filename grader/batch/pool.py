"""`grade batch` on this machine: a pool of worker processes, each grading one submission at a time
through a warm grader (grader.batch.worker); Ctrl-C and a dying worker handled without a traceback
or a lost row."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path

from grader.batch import collect
from grader.course import Course

# in a pool's worker process: a grade is under way; the batch has ended it (see _end_worker)
_grading = False
_ending = False


def grade_locally(course: Course, assignment: str, entries: list[collect.Entry],
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


def _grade(*, course_path: Path, assignment: str, tree: Path, student: str, require_namespaces: bool) -> dict:
    """A pool worker's task: grader.batch.worker.grade_tree, none once the batch has ended the worker
    (submissions already queued to it would be graded in full, and waited for)."""
    global _grading
    from grader.batch import worker

    if _ending:
        return {"error": "the batch was interrupted"}
    _grading = True
    try:
        return worker.grade_tree(course_path=course_path, assignment=assignment, tree=tree, student=student,
                                 require_namespaces=require_namespaces)
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
