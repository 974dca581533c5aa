"""A second grader process, for interactive grading on a machine with a core to spare.

A grading is two processes taking turns: the grader (pytest, Hypothesis, the oracles) and the
submission's worker, so one core of two stayed idle while a student waited for `grade --watch`.
A Helper is a warm grader of its own (its imports, its worker template) in a child process. Given
the later checks of a grading, it runs them in a sandbox of its own while the grader runs the
earlier ones, and hands back what a single run would have recorded for them: the draws are
derandomized, and the grader merges the outcomes, the forbidden APIs run and the faults in the
order of a single run. The JSON is the same (tests/kit/sandbox/test_reproducible.py). What a hang or a
crash teaches about a component stays with it: where the cut falls inside a component and one of
its checks meets a fault, on either side, the grader runs all of its checks again itself. What a
module prints when it is imported shows under the first check of each process that imports it:
in a split grading, once per side.

Both processes are the grader's own: they trust each other, and pickle what they exchange. The
helper stops when its stdin closes (the grader ended, however it ended) and leaves Ctrl-C to it.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from grader.sandbox.reap import KIT_PROCESSES

if TYPE_CHECKING:
    from grader.course import Course
    from grader.grading.run import GradingRun
    from grader.results import Fault, Outcome

# the import path comes first, as a plain list: grader (and Start) can be unpickled only once it is set
BOOT = "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); " \
       "from grader.grading.warm import serve; serve(pickle.load(sys.stdin.buffer))"


@dataclass(frozen=True)
class Start:
    """The helper's first message, after its import path: the course it grades for."""

    course: Path


@dataclass(frozen=True)
class Ready:
    """The helper's first reply: warm, and taking jobs."""


@dataclass(frozen=True)
class Job:
    """The far half of a grading, as the helper takes it (grader.grading.warm.serve grades it)."""

    assignment: str
    submission: Path
    device: str
    gpu: str | None
    reference: Path | None  # the reference tree, where the grading has it (the instructors' tier)
    forbidden: list[str]  # course.toml's forbidden APIs, watched there as here
    checks: dict[str, tuple[str, ...]]  # check id -> the reference parts to swap in
    quick: frozenset[str]


@dataclass(frozen=True)
class Done:
    """What a half of a grading recorded besides what it ran here: its checks' outcomes, its worker's
    faults and the forbidden calls it saw (each with its check, in the order they came), and the
    submission's modules each component asked for."""

    results: dict[str, Outcome] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    executed: list[tuple[object, str]] = field(default_factory=list)
    modules: dict[str, set[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """The helper's reply to a job it could not grade: the tail of its traceback."""

    error: str


def spare_core() -> bool:
    """Whether this process may use two cores: the helper only pays where they exist."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) >= 2


def split(components: list[tuple[str, list[str]]], cost: Mapping[str, float]) -> tuple[list[str], list[str]]:
    """(near, far): the checks of the first components and those of the rest, cut where the two
    halves' expected times are closest, between two components where that is as close as within
    one; `cost`: seconds by check (1 where unknown)."""
    checks = [(i, check) for i, (_, ids) in enumerate(components) for check in ids]
    total, best, cut, before = sum(cost.get(c, 1.0) for _, c in checks), None, 0, 0.0
    for k in range(1, len(checks)):
        before += cost.get(checks[k - 1][1], 1.0)
        between = checks[k - 1][0] != checks[k][0]
        worse = (max(before, total - before), not between)
        if best is None or worse < best:
            best, cut = worse, k
    cut = cut or len(checks)  # a single check: nothing to cut
    return [c for _, c in checks[:cut]], [c for _, c in checks[cut:]]


def run(grading: GradingRun, checks: dict[str, tuple[str, ...]], quick: frozenset[str]) -> dict[str, Outcome]:
    """grading.run(checks, quick=quick), with the later checks run by the grading's helper meanwhile
    where it is ready; what they record is merged in the order of a single run."""
    helper = grading.services.helper

    def here(ids) -> dict[str, Outcome]:
        return grading.run({check: checks[check] for check in ids}, quick=quick)

    near, far = split([(comp.name, [chk.id for chk in comp.checks if chk.id in checks])
                       for comp in grading.assignment.components], grading.services.cost) \
        if helper is not None else (list(checks), [])
    if far:
        assert helper is not None
        if not _hand_over(grading, helper, {check: checks[check] for check in far}, quick):
            near, far = list(checks), []
    try:
        results = here(near)
    except BaseException:
        if far:  # Ctrl-C, or suites that did not run: the far half's reply is dropped before the next job
            assert helper is not None
            helper.abandon()
        raise
    if not far:
        return results
    assert helper is not None
    try:
        done = helper.collect()
    except BaseException:  # Ctrl-C (a save under --watch) mid-reply: the pipe's framing is lost
        helper.broken = True
        raise
    if done is None:  # the helper failed: nothing is lost, those checks run here
        results.update(here(far))
        return results
    done, again = _cut_faulted(grading, done, set(near), set(far), set(checks))
    results.update(done.results)
    merge(grading.student, done)
    if again:
        results.update(here([check for check in checks if check in again]))
        merge(grading.student, Done())  # the checks run again, in their places
    return results


def _hand_over(grading: GradingRun, helper: Helper, far: dict[str, tuple[str, ...]], quick: frozenset[str]) -> bool:
    """Give the far checks to `helper` where it is ready (True); else warm it with them, once, and run them here."""
    o, student = grading.options, grading.student
    job = Job(assignment=grading.assignment.name, submission=grading.submission, device=o.device, gpu=grading.gpu,
              reference=student.reference, forbidden=list(student.forbidden), checks=far, quick=quick)
    if helper.ready():
        helper.submit(job)
        return True
    if not helper.warmed and not helper.broken:
        helper.warm(job)
    return False


def _cut_faulted(grading: GradingRun, done: Done, near: set[str], far: set[str],
                 checks: set[str]) -> tuple[Done, set[str]]:
    """The checks of the component whose checks lie on both sides, where a fault hit it on either side: all
    of them run again here, from the start; (`done` without what they left, those checks). What they left
    here is forgotten."""
    again: set[str] = set()
    faulted = {f.check for f in grading.student.sandbox.faults} | {f.check for f in done.faults}
    for cut in grading.assignment.components:  # the one whose checks lie on both sides, if any
        ids = {chk.id for chk in cut.checks}
        if ids & near and ids & far and ids & faulted:
            again = ids & checks  # a fault on either side: all of its checks, here, from the start
            grading.student.forget(cut.name, again)
            done = replace(done, results={c: o for c, o in done.results.items() if c not in again},
                           faults=[f for f in done.faults if f.check not in again],
                           executed=[e for e in done.executed if e[1] not in again])
    return done, again


def calls(student) -> list[tuple[object, str]]:
    """The forbidden calls the worker saw, each with the check that made it."""
    return list(student.executed)


def merge(student, far: Done) -> None:
    """The far half's faults and forbidden calls among this process's, each in the place of its check in
    a single run (a check's own in the order they came), and the modules its components asked for."""
    place = {check: i for i, check in enumerate(student.order)}
    student.sandbox.faults[:] = sorted(student.sandbox.faults + list(far.faults),
                                       key=lambda f: place.get(f.check, len(place)))
    student.executed = sorted([*student.executed, *far.executed], key=lambda pair: place.get(pair[1], len(place)))
    for component, modules in far.modules.items():
        student.modules.setdefault(component, set()).update(modules)


class Helper:
    """The grader's end. It warms up in the background: its imports and template, then a first job
    whose outcomes nobody waits for (`warm`, the far half of the grading under way), so that the
    first grading it takes part in pays nothing a later one does not."""

    def __init__(self, course: Course):
        self.proc = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True, bufsize=0)
        KIT_PROCESSES.add(self.proc.pid)  # in a session of its own, and no sandbox's orphan (grader.sandbox.reap)
        self.broken = False
        self.warmed = False  # its warm-up job is sent
        self.pending = 1  # replies not read yet: Ready, then the warm-up's
        self.jobs = 0  # gradings it took part in
        self._send(list(sys.path))
        self._send(Start(course.path))

    def ready(self, wait: float = 0.0) -> bool:
        """Whether it is warm and idle, waiting at most `wait` seconds for what it has yet to say."""
        assert self.proc.stdout is not None
        while self.pending and not self.broken and select.select([self.proc.stdout], [], [], wait)[0]:
            if self._receive() is None:
                self.broken = True
            self.pending -= 1
        return self.warmed and not self.pending and not self.broken

    def warm(self, job: Job) -> None:
        """Grade `job` there once, for the warmth: its reply is read and dropped by `ready`."""
        self.warmed = True
        self.pending += 1
        self._send(job)

    def abandon(self) -> None:
        """The submitted job's reply will not be collected: `ready` drops it when it comes."""
        self.pending += 1

    def submit(self, job: Job) -> None:
        """Start grading `job` (the far half of a grading, grader.grading.split.run) there; it must be `ready`."""
        self._send(job)

    def collect(self) -> Done | None:
        """What the submitted job recorded; None if the helper failed (its reply Failed, or none), which
        then takes no more jobs (the grader runs those checks itself)."""
        reply = self._receive()
        if not isinstance(reply, Done):
            self.broken = True
            return None
        self.jobs += 1
        return reply

    def _send(self, message: object) -> None:
        assert self.proc.stdin is not None
        try:
            data = memoryview(pickle.dumps(message))
            while data:
                data = data[self.proc.stdin.write(data) or 0:]
        except OSError:
            self.broken = True

    def _receive(self) -> object:
        assert self.proc.stdout is not None
        try:
            head = self._read(8)
            return pickle.loads(self._read(struct.unpack(">Q", head)[0]))
        except (OSError, EOFError, struct.error, pickle.UnpicklingError):
            self.broken = True
            return None

    def _read(self, n: int) -> bytes:
        # unbuffered: select() must see every byte not read yet
        assert self.proc.stdout is not None
        data = b""
        while len(data) < n:
            chunk = os.read(self.proc.stdout.fileno(), n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def close(self, now: bool = False) -> None:
        """`now`: without waiting for the job under way (a broken helper's is nobody's)."""
        try:
            if now:
                self.proc.kill()
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        KIT_PROCESSES.discard(self.proc.pid)  # reaped: its pid may be a sandbox's orphan's next
