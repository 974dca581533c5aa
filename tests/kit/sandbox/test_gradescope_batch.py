"""Submissions graded one after another by one warm grader in the seccomp tier, the tier Gradescope's
container gets (Docker's default seccomp profile refuses namespaces), as root, as run_autograder runs:
a grading's processes, a daemon that left its session and its parent included, are all gone before
the next grading starts, and a prober in the worker reads nothing of the worker template's folder.
Run here, on this machine's kernel, in the seccomp tier (tests/kit/container/test_container.py runs
run_autograder in a real container, one submission per container run)."""

import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

from grader.course import load
from grader.sandbox import isolation
from tests.kit.conftest import ROOT, SOLUTIONS, earned, full_marks, scores
from tests.kit.sandbox.test_isolation import hostile

WHY = isolation.confinement().get("error", "")
pytestmark = pytest.mark.skipif(bool(WHY), reason=f"no seccomp tier here: {WHY}")


def leave_a_daemon(marker: str) -> str:
    """A new session where it may, then a grandchild whose parent exits: it would sleep 3 s, then spin
    (on half a CPU, the next grading's checks would time out), but the worker refuses its fork
    (grader.sandbox.child.processes); and a prober of the template's files, by the paths every
    process's command line names."""
    return f"""
try:
    daemon = os.fork()
except OSError as e:
    print("refused:", e)
    daemon = None
if daemon == 0:
    try:
        try:
            os.setsid()  # refused in the seccomp tier: it stays in the worker's group, an orphan all the same
        except OSError:
            pass
        if os.fork() == 0:
            # the fork itself, named for `alive` (an exec of the interpreter never ran in this tier here)
            import ctypes, time
            ctypes.CDLL(None).prctl(15, {marker.encode()!r}, 0, 0, 0)
            time.sleep(3)
            while True:
                pass
    finally:
        os._exit(0)
if daemon:
    os.wait()
named = set()
for pid in filter(str.isdigit, os.listdir("/proc")):  # every command line is world-readable
    try:
        named |= {{a.decode() for a in open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0") if b"/" in a}}
    except OSError:
        pass
probed = [p for p in named if "grade-template-" in p]
probed += [os.path.join(os.path.dirname(p), "template.log") for p in probed]
print("probing", probed)
if not probed:  # the probe is live only where it finds the template: failing here says so
    print("GOT THROUGH: no template's file named")
    LEAK = True
for path in probed:
    try:
        open(path, "rb").read(1)
        print("GOT THROUGH: read", path)
        LEAK = True
    except OSError as e:
        print("refused:", path, e)
"""


def alive(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == marker:
                found.append(int(pid))
        except OSError:
            pass
    return found


def watch_for(marker: str, seen: set[int], done: threading.Event) -> None:
    """Every daemon of `marker` alive while the grading runs."""
    while not done.wait(0.2):
        seen.update(alive(marker))


def test_no_daemon_of_one_grading_reaches_the_next_in_the_seccomp_tier(tmp_path, monkeypatch):
    """A warm grader's batch as root: the daemon's fork is refused, so none ever runs (where one got
    through, the sandbox would end it with the worker: tests/kit/sandbox/test_adversarial.py,
    TestEveryProcessEndsWithItsGradingWithoutRoot), and the prober reads none of the template's files."""
    from grader.grading.warm import Grader
    from grader.results import to_json

    monkeypatch.setenv(isolation.ENV_VAR, "seccomp")
    marker = f"kd{uuid.uuid4().hex[:13]}"  # a process's name (comm) has 15 characters
    tree = hostile(tmp_path, leave_a_daemon(marker))
    try:
        with Grader(load(ROOT / "course.toml")) as grader:
            seen: set[int] = set()
            done = threading.Event()
            watch = threading.Thread(target=watch_for, args=(marker, seen, done))
            watch.start()
            try:
                first = to_json(grader.grade(assignment=grader.course.assignment("assignment1"), submission=tree))
            finally:
                done.set()
                watch.join()
            assert not seen, f"the daemon ran: pids {sorted(seen)}"
            assert first["isolation"] == "seccomp"
            assert alive(marker) == [], "the daemon outlived its grading"
            # the prober read nothing: every check passes (its fork holds its points for review: the default)
            assert earned(first) == full_marks(first), first["components"]
            second = to_json(grader.grade(assignment=grader.course.assignment("assignment1"), submission=SOLUTIONS))
            assert scores(second) == full_marks(second)
    finally:
        for pid in alive(marker):
            os.kill(pid, signal.SIGKILL)
