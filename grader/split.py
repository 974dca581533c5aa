"""A second grader process, for interactive grading on a machine with a core to spare.

A grading is two processes taking turns: the grader (pytest, Hypothesis, the oracles) and the
submission's worker, so one core of two stayed idle while a student waited for `grade --watch`.
A Helper is a warm grader of its own (its imports, its worker template) in a child process. Given
the later components of a grading, it runs their checks in a sandbox of its own while the grader
runs the earlier ones, and hands back what a single run would have recorded for them: each
component's checks run in order in one worker (what a hang teaches about a component stays with
it), the draws are derandomized, and the grader merges the outcomes, the forbidden APIs run and
the faults in the order of a single run. The JSON is the same (tests/kit/test_reproducible.py).

Both processes are the grader's own: they trust each other, and pickle what they exchange. The
helper stops when its stdin closes (the grader ended, however it ended) and leaves Ctrl-C to it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.course import Course
    from grader.results import Outcome

BOOT = "import pickle, sys; init = pickle.load(sys.stdin.buffer); sys.path[:] = init['path']; " \
       "from grader.split import serve; serve(init)"


def spare_core() -> bool:
    """Whether this process may use two cores: the helper only pays where they exist."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) >= 2


def split(components: list[tuple[str, list[str]]], cost: dict[str, float]) -> tuple[list[str], list[str]]:
    """(near, far): the checks of the first components and those of the rest, cut where the
    two halves' expected times are closest; `cost`: seconds by check (1 where unknown)."""
    weights = [sum(cost.get(check, 1.0) for check in checks) for _, checks in components]
    total, best, cut, before = sum(weights), None, 0, 0.0
    for i in range(1, len(components)):
        before += weights[i - 1]
        worse = max(before, total - before)
        if best is None or worse < best:
            best, cut = worse, i
    if not cut:  # one component: nothing to cut
        return [check for _, checks in components for check in checks], []
    near = [check for _, checks in components[:cut] for check in checks]
    return near, [check for _, checks in components[cut:] for check in checks]


class Helper:
    """The grader's end. It warms up in the background: its imports and template, then a first job
    whose outcomes nobody waits for (`warm`, the far half of the grading under way), so that the
    first grading it takes part in pays nothing a later one does not."""

    def __init__(self, course: Course):
        self.proc = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True, bufsize=0)
        self.broken = False
        self.warmed = False  # its warm-up job is sent
        self.pending = 1  # replies not read yet: "ready", then the warm-up's
        self.jobs = 0  # gradings it took part in
        self._send({"path": list(sys.path), "course": str(course.path)})

    def ready(self, wait: float = 0.0) -> bool:
        """Whether it is warm and idle, waiting at most `wait` seconds for what it has yet to say."""
        assert self.proc.stdout is not None
        while self.pending and not self.broken and select.select([self.proc.stdout], [], [], wait)[0]:
            if self._receive() is None:
                self.broken = True
            self.pending -= 1
        return self.warmed and not self.pending and not self.broken

    def warm(self, **job: Any) -> None:
        """Grade `job` there once, for the warmth: its reply is read and dropped by `ready`."""
        self.warmed = True
        self.pending += 1
        self._send(job)

    def abandon(self) -> None:
        """The submitted job's reply will not be collected: `ready` drops it when it comes."""
        self.pending += 1

    def submit(self, **job: Any) -> None:
        """Start grading `job` (grader.grading._grade's far half) there; it must be `ready`."""
        self._send(job)

    def collect(self) -> dict | None:
        """The submitted job's {"results", "executed", "faults"}; None if the helper failed, which
        then takes no more jobs (the grader runs those checks itself)."""
        reply = self._receive()
        if not isinstance(reply, dict) or "results" not in reply:
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

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def serve(init: dict) -> None:
    """The helper's side: grade the jobs read from stdin until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else prints cannot corrupt the replies

    def reply(message: object) -> None:
        data = pickle.dumps(message)
        replies.write(struct.pack(">Q", len(data)) + data)
        replies.flush()

    from grader import load_course
    from grader.warm import Grader

    course = load_course(Path(init["course"]))
    with Grader(course) as grader:
        reply("ready")
        while True:
            try:
                job = pickle.load(sys.stdin.buffer)
            except EOFError:
                return
            try:
                reply(_grade_far(grader, course, job))
            except Exception:
                reply({"error": traceback.format_exc()[-3000:]})


def _grade_far(grader: Any, course: Course, job: dict) -> dict:
    from grader.grading import frozen_heap, one_intra_op_thread, run_checks
    from grader.suite.remote import Submission

    sandbox = grader.sandbox(assignment=job["assignment"], submission=job["submission"], device=job["device"])
    try:
        student = Submission(sandbox, job["gpu"], job["reference"])
        student.forbidden = job["forbidden"]
        with one_intra_op_thread(), frozen_heap():
            results: dict[str, Outcome] = run_checks(course, student, job["checks"], quick=job["quick"])
        faults = [(fault.kind, fault.detail, fault.check) for fault in sandbox.faults]
        return {"results": results, "executed": list(zip(student.executed, student.executed_in, strict=True)),
                "faults": faults}
    finally:
        sandbox.close()
