"""`grade assignmentN --watch`: grade, then grade again whenever a graded file changes.

Each re-grade is a whole grade on a warm grader (grader.grading.warm): a fresh worker forked from the
template, every check run, the same report a cold `grade` gives. Changes are seen by watchfiles
(inotify where there is one), debounced: the writes of one save, an editor's rename dance or a
`git checkout` of several files make one re-grade. An edit made while a grade runs cancels that
grade (it grades files that are gone: a hang would keep the fix waiting for its timeout), and the
new one starts at once: the watching thread sends CANCEL to the main thread, whose handler raises
KeyboardInterrupt there, which ends the grading as Ctrl-C does (its worker killed at once).
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from grader.course import Course
from grader.grading.warm import Grader
from grader.results import Report

CANCEL = signal.SIGUSR2  # to the main thread: a save came while it grades


def watched_files(course: Course, assignment: str, submission: Path) -> set[Path]:
    """The files a grade of `assignment` stages from `submission` (its own and those it builds on)."""
    root = Path(submission).resolve()
    return {root / spec.name / name for spec in course.closure(assignment) for name in spec.files}


def watch(*, grader: Grader, assignment: str, submission: Path, show: Callable[[Report, list[str]], None],
          announce: Callable[[list[str]], None] = lambda changed: None, stop: threading.Event | None = None,
          debounce_ms: int = 1600, step_ms: int = 50) -> int:
    """Grade `submission`, then again after each change to a watched file, until `stop` is set or
    Ctrl-C; `show(report, changed)` gets every report, with the names of the files whose change
    caused it ([] for the first), and `announce(changed)` is called as each grade starts. Returns the
    number of grades; Ctrl-C raises KeyboardInterrupt."""
    import watchfiles

    submission = Path(submission).resolve()
    files = watched_files(grader.course, assignment, submission)
    stop = stop or threading.Event()
    seen: queue.Queue[set] = queue.Queue()
    grading, cancelled = threading.Event(), threading.Event()
    # signals reach the main thread only: elsewhere (a caller's thread) a save waits for the grade to end
    main = threading.current_thread() is threading.main_thread()

    def observe() -> None:
        # watching from before the first grade, in a thread of its own: a save made while a grade
        # runs is seen, and cancels it
        for changes in watchfiles.watch(submission, watch_filter=lambda _change, path: Path(path) in files,
                                        debounce=debounce_ms, step=step_ms, stop_event=stop, raise_interrupt=False):
            seen.put(changes)
            if main and grading.is_set():
                cancelled.set()
                signal.pthread_kill(threading.main_thread().ident or 0, CANCEL)

    def cancel(_signum, _frame) -> None:
        if grading.is_set():
            raise KeyboardInterrupt

    before = signal.signal(CANCEL, cancel) if main else None
    observer = threading.Thread(target=observe, name="grade-watch", daemon=True)
    observer.start()
    changed: list[str] = []
    grades = 0
    try:
        while not stop.is_set():
            announce(changed)
            report = None
            cancelled.clear()  # set late by a save that came as the last grade ended
            try:
                grading.set()
                report = grader.grade(assignment=assignment, submission=submission)
            except KeyboardInterrupt:
                if not cancelled.is_set():  # Ctrl-C
                    raise
            finally:
                grading.clear()
            if report is not None:
                show(report, changed)
                grades += 1
            paths = _next_changes(seen, stop)
            # a cancelled grade's changes are the next one's too
            changed = sorted({*([] if report is not None else changed),
                              *(str(Path(path).relative_to(submission)) for _change, path in paths)})
    finally:
        stop.set()
        if main:
            signal.signal(CANCEL, before)
        observer.join(timeout=5)
    return grades


def _next_changes(seen: queue.Queue, stop: threading.Event) -> set:
    """Every change seen since the last grade, waiting for one; empty once `stop` is set."""
    paths: set = set()
    while not paths and not stop.is_set():
        try:
            paths |= seen.get(timeout=0.2)
        except queue.Empty:
            continue
    while not seen.empty():
        paths |= seen.get_nowait()
    return paths
