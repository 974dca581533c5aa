"""A second grader process, for interactive grading on a machine with a core to spare.

A grading is two processes taking turns: the grader (pytest, Hypothesis, the oracles) and the
submission's worker, so one core of two stayed idle while a student waited for `grade --watch`.
A Helper is a warm grader of its own (its imports, its worker template) in a child process. Given
the later checks of a grading, it runs them in a sandbox of its own while the grader runs the
earlier ones, and hands back what a single run would have recorded for them: the draws are
derandomized, and the grader merges the outcomes, the forbidden APIs run and the faults in the
order of a single run. The JSON is the same (tests/kit/test_reproducible.py). What a hang or a
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
from typing import TYPE_CHECKING, Any

from grader.sandbox.reap import KIT

if TYPE_CHECKING:
    from grader.course import Course
    from grader.results import Outcome

BOOT = "import pickle, sys; init = pickle.load(sys.stdin.buffer); sys.path[:] = init['path']; " \
       "from grader.grading.warm import serve; serve(init)"


def spare_core() -> bool:
    """Whether this process may use two cores: the helper only pays where they exist."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) >= 2


def split(components: list[tuple[str, list[str]]], cost: dict[str, float]) -> tuple[list[str], list[str]]:
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

def run(checks: dict[str, tuple[str, ...]], run_here, spec, student, quick: frozenset[str], helper: Helper | None,
        cost: dict[str, float], **job) -> dict[str, Outcome]:
    """run_here(checks, quick=quick), with the later checks run by `helper` meanwhile where it is
    ready; what they record is merged in the order of a single run."""
    near, far = split([(comp.name, [chk.id for chk in comp.checks if chk.id in checks])
                       for comp in spec.components], cost) if helper is not None else (list(checks), [])
    if far:
        assert helper is not None
        far_job = {"checks": {check: checks[check] for check in far}, "quick": quick,
                   "forbidden": student.forbidden, "reference": student.reference, **job}
        if helper.ready():
            helper.submit(**far_job)
        else:
            if not helper.warmed and not helper.broken:
                helper.warm(**far_job)
            near, far = list(checks), []
    try:
        results = run_here({check: checks[check] for check in near}, quick=quick)
    except BaseException:
        if far:  # Ctrl-C, or suites that did not run: the far half's reply is dropped before the next job
            assert helper is not None
            helper.abandon()
        raise
    if not far:
        return results
    assert helper is not None
    done = helper.collect()
    if done is None:  # the helper failed: nothing is lost, those checks run here
        results.update(run_here({check: checks[check] for check in far}, quick=quick))
        return results
    again: set[str] = set()
    faulted = {f.check for f in student.sandbox.faults} | {check for _, _, check in done["faults"]}
    for cut in spec.components:  # the one whose checks lie on both sides, if any
        ids = {chk.id for chk in cut.checks}
        if ids & set(near) and ids & set(far) and ids & faulted:
            again = ids & set(checks)  # a fault on either side: all of its checks, here, from the start
            student.forget(cut.name, again)
            done = {"results": {c: o for c, o in done["results"].items() if c not in again},
                    "faults": [f for f in done["faults"] if f[2] not in again],
                    "executed": [e for e in done["executed"] if e[1] not in again], "modules": done["modules"]}
    results.update(done["results"])
    merge(student, done)
    if again:
        results.update(run_here({check: checks[check] for check in checks if check in again}, quick=quick))
        merge(student, {"faults": [], "executed": []})  # the checks run again, in their places
    return results


def merge(student, far: dict) -> None:
    """The far half's faults and forbidden calls among this process's, each in the place of its
    check in a single run (a check's own in the order they came)."""
    from grader.sandbox.host import WorkerFault

    place = {check: i for i, check in enumerate(student.order)}
    faults = []
    for kind, detail, check in far["faults"]:
        faults.append(WorkerFault(kind, detail))
        faults[-1].check = check
    student.sandbox.faults[:] = sorted(student.sandbox.faults + faults, key=lambda f: place.get(f.check, len(place)))
    executed = sorted([*zip(student.executed, student.executed_in, strict=True), *far["executed"]],
                      key=lambda pair: place.get(pair[1], len(place)))
    student.executed, student.executed_in = [e for e, _ in executed], [c for _, c in executed]
    for component, modules in far.get("modules", {}).items():
        student.modules.setdefault(component, set()).update(modules)


class Helper:
    """The grader's end. It warms up in the background: its imports and template, then a first job
    whose outcomes nobody waits for (`warm`, the far half of the grading under way), so that the
    first grading it takes part in pays nothing a later one does not."""

    def __init__(self, course: Course):
        self.proc = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True, bufsize=0)
        KIT.add(self.proc.pid)  # in a session of its own, and no sandbox's orphan (grader.sandbox.reap)
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
        """Start grading `job` (grader.grading.pipeline._grade's far half) there; it must be `ready`."""
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
        KIT.discard(self.proc.pid)  # reaped: its pid may be a sandbox's orphan's next
