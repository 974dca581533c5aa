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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course import Assignment, Course
from grader.grading.warm import Grader
from grader.results import Report

CANCEL = signal.SIGUSR2  # to the main thread: a save came while it grades


def watched_files(course: Course, assignment: str, submission: Path) -> set[Path]:
    """The files a grade of `assignment` stages from `submission` (its own and those it builds on)."""
    root = Path(submission).resolve()
    return {root / spec.name / name for spec in course.closure(assignment) for name in spec.files}


@dataclass(frozen=True)
class WatchOptions:
    """How `watch` watches: the event that ends it (set from another thread), watchfiles' pacing."""

    stop: threading.Event | None = None
    debounce_ms: int = 1600
    step_ms: int = 50


def watch(*, grader: Grader, assignment: Assignment, submission: Path, show: Callable[[Report, list[str]], None],
          announce: Callable[[list[str]], None] = lambda changed: None, options: WatchOptions | None = None) -> int:
    """Grade `submission`, then again after each change to a watched file, until `options.stop` is set
    or Ctrl-C; `show(report, changed)` gets every report, with the names of the files whose change
    caused it ([] for the first), and `announce(changed)` is called as each grade starts. Returns the
    number of grades; Ctrl-C raises KeyboardInterrupt."""
    options = options or WatchOptions()
    submission = Path(submission).resolve()
    stop = options.stop or threading.Event()
    changed: list[str] = []
    grades = 0
    with _Observer(watched_files(grader.course, assignment.name, submission), submission, options, stop) as observer:
        while not stop.is_set():
            announce(changed)
            report = observer.grade(lambda: grader.grade(assignment=assignment, submission=submission))
            if report is not None:
                show(report, changed)
                grades += 1
            paths = _next_changes(observer.seen, stop)
            # a cancelled grade's changes are the next one's too
            changed = sorted({*([] if report is not None else changed),
                              *(str(Path(path).relative_to(submission)) for _change, path in paths)})
    return grades


class _Observer:
    """The watching thread, and the grade it cancels: entered, it watches; left, it stops."""

    def __init__(self, files: set[Path], submission: Path, options: WatchOptions, stop: threading.Event):
        import watchfiles  # here, not in the thread: a missing package is the caller's error

        self.watchfiles = watchfiles
        self.files, self.submission, self.options, self.stop = files, submission, options, stop
        self.seen: queue.Queue[set] = queue.Queue()
        self.grading, self.cancelled = threading.Event(), threading.Event()
        # signals reach the main thread only: elsewhere (a caller's thread) a save waits for the grade to end
        self.main = threading.current_thread() is threading.main_thread()
        self.thread = threading.Thread(target=self._observe, name="grade-watch", daemon=True)
        self.before: Any = None

    def _observe(self) -> None:
        # watching from before the first grade, in a thread of its own: a save made while a grade
        # runs is seen, and cancels it
        for changes in self.watchfiles.watch(self.submission,
                                             watch_filter=lambda _change, path: Path(path) in self.files,
                                             debounce=self.options.debounce_ms, step=self.options.step_ms,
                                             stop_event=self.stop, raise_interrupt=False):
            self.seen.put(changes)
            if self.main and self.grading.is_set():
                self.cancelled.set()
                signal.pthread_kill(threading.main_thread().ident or 0, CANCEL)

    def _cancel(self, _signum, _frame) -> None:
        if self.grading.is_set():
            raise KeyboardInterrupt

    def __enter__(self) -> _Observer:
        self.before = signal.signal(CANCEL, self._cancel) if self.main else None
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop.set()
        if self.main:
            signal.signal(CANCEL, self.before)
        self.thread.join(timeout=5)

    def grade(self, run: Callable[[], Report]) -> Report | None:
        """run()'s report, or None when a save cancelled it (Ctrl-C raises)."""
        report = None
        self.cancelled.clear()  # set late by a save that came as the last grade ended
        try:
            self.grading.set()
            report = run()
        except KeyboardInterrupt:
            if not self.cancelled.is_set():  # Ctrl-C
                raise
        finally:
            self.grading.clear()
        return report


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
