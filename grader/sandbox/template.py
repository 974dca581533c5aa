"""A worker template for grading many submissions in one process: torch imported once, each
worker forked from it (grader.sandbox.child.zygote) instead of started as a fresh Python.

    with Template(course.limits) as template:
        for tree in trees:
            grade_submission(course=course, assignment=name, submission=tree,
                             services=Services(template=template))

Every worker start of a `Sandbox(..., template=template)`, the first and each one after a fault,
is a fork made into the worker that `Sandbox` would have started: the same isolation (namespaces
or process, as `grader.sandbox.isolation` chooses for the sandbox's limits), resource limits,
environment and descriptors, and the same worker code, imported after the fork from the
submission's own staged copy, so that its baseline of global state is taken there too. The
template is trusted and runs no submission's code; it is not limited, and it cannot be reached
from a namespaced worker (another PID namespace, a root without its folder, no descriptor of
its). Linux only: it waits on pidfds.

The forks are the template's children, not this process's: the template reports how each
ended, and kills a fork's process group only before it reaps it, so that a kill can never
reach a process that has taken over a reaped one's id. Every fork dies with the template
(SIGKILL), and the next worker start launches a new template: a worker without namespaces is a
process of the grading user, as the grader is, and can kill its parent as it could the grader.
"""

import itertools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader.limits import Limits
from grader.sandbox.limits import environment
from grader.sandbox.reap import KIT_PROCESSES, KitProcesses

CHILD = Path(__file__).resolve().parent / "child"
# the template's copy of the zygote, loaded by path: nothing named grader is imported in it
BOOT = ("import sys, importlib.util as u; s = u.spec_from_file_location('_grader_zygote', sys.argv[1]); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); m.main()")
# What a worker imports from the Python installation before it first answers (worker.main: torch,
# then torch._dynamo in placement.warm), imported once in the template instead: a fork then has
# the modules a fresh worker has (tests/kit/sandbox/test_template.py compares them).
PRELOAD = ("torch", "torch._dynamo")
MAX_MESSAGE = 1 << 16
KILL_SECONDS = 30.0  # for the template to report a killed fork reaped


class TemplateError(RuntimeError):
    """The template failed: the grader's trouble, not the submission's."""


def unavailable() -> str:
    """Why a template cannot run here ("" when it can)."""
    if sys.platform != "linux" or not hasattr(os, "pidfd_open"):
        return f"a worker template needs Linux with pidfds ({sys.platform})"
    return ""


class _Server:
    """One template process and its control socket."""

    def __init__(self, startup_seconds: float, kit: KitProcesses):
        self.kit = kit
        self.dir = Path(tempfile.mkdtemp(prefix="grade-template-"))
        # its own copy, in a folder of its own that no worker sees: the command line, which a worker
        # reads as its own, names neither the kit nor a submission
        for name in ("zygote.py", "jail.py"):
            shutil.copyfile(CHILD / name, self.dir / name)
        self.log = self.dir / "template.log"
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.lock = threading.Lock()  # one reader or writer of the socket at a time
        self.events: dict[int, dict] = {}  # fork id (0: the template) -> what the template said of it
        self.dead = False
        with open(self.log, "wb") as log:
            # the workers' own environment: what torch reads at import is what a worker of its own reads
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", BOOT, str(self.dir / "zygote.py"), str(theirs.fileno()), *PRELOAD],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.dir, env=environment(str(self.dir)),
                pass_fds=(theirs.fileno(),), start_new_session=True)
        kit.add(self.proc.pid)  # in a session of its own, and no sandbox's orphan (grader.sandbox.reap)
        theirs.close()
        try:
            ready = self.await_event(0, ("ready",), startup_seconds)
        except TemplateError:
            ready = None
        if ready is None:
            self.close()
            raise TemplateError(f"the worker template did not start within {startup_seconds:g} s{self.tail()}")
        if ready["threads"] != 1:
            # a fork copies only the thread that forks: another one's locks would stay held in the worker
            self.close()
            raise TemplateError(f"the worker template runs {ready['threads']} threads after importing torch; "
                                "a fork of it is only safe with one")
        self.pid = int(ready["ready"])

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def send(self, message: dict, fds: tuple[int, ...] = ()):
        with self.lock:
            try:
                socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
            except OSError as e:
                self.dead = True
                raise TemplateError(f"the worker template is gone ({e}){self.tail()}") from None

    def await_event(self, id: int, keys: tuple[str, ...], timeout: float | None) -> dict | None:
        """What the template said of fork `id` once it has said one of `keys`; None after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.lock:
                event = self.events.get(id, {})
                if any(key in event for key in keys):
                    return event
                if self.dead:
                    raise TemplateError(f"the worker template has died{self.tail()}")
                left = 0.5 if deadline is None else min(deadline - time.monotonic(), 0.5)
                if deadline is not None and left <= 0:
                    return None
                if select.select([self.sock], [], [], max(left, 0))[0]:
                    self._read()

    def _read(self):
        try:
            data = self.sock.recv(MAX_MESSAGE)
        except OSError:
            data = b""
        if not data:
            self.dead = True
            return
        message = json.loads(data)
        self.events.setdefault(int(message.get("id", 0)), {}).update(message)

    def forget(self, id: int):
        with self.lock:
            self.events.pop(id, None)

    def tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f": {text[-2000:]}" if text else ""

    def close(self):
        """The template kills and reaps its forks when its socket closes, then exits."""
        self.dead = True
        self.sock.close()
        try:
            self.proc.wait(timeout=KILL_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.kit.discard(self.proc.pid)  # reaped: its pid may be a sandbox's orphan's next
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(frozen=True)
class ForkJob:
    """The worker a fork is to become (zygote.become_worker): its folder `cwd`, the folder `here` it sees
    the submission in, its `pycache`, `env` and resource limits; `jail` the launcher's spec
    (grader.sandbox.isolation.spec) in namespaces, else None; `become`: the uid the worker takes before
    the submission's code runs, or "" (its argument); `confine`: the seccomp tier's spec the worker
    applies to itself then, or "" (its argument); `orig_argv` the command line that would have started
    it, up to its arguments (sys.orig_argv)."""

    cwd: Path
    here: str
    pycache: str
    become: str
    confine: str
    env: dict[str, str]
    orig_argv: list[str]
    rlimits: list[tuple[int, int, int]]
    jail: dict | None

    def message(self, id: int) -> dict:
        return {"op": "spawn", "id": id, "cwd": str(self.cwd), "here": self.here, "pycache": self.pycache,
                "become": self.become, "confine": self.confine, "env": self.env, "orig_argv": self.orig_argv,
                "rlimits": self.rlimits, "jail": self.jail}


class Forked:
    """A worker forked by the template, as much of a Popen as `Sandbox` uses: pid, returncode, wait."""

    def __init__(self, server: _Server, id: int, pid: int):
        self.server, self.id, self.pid = server, id, pid
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                event = self.server.await_event(self.id, ("status",), timeout)
            except TemplateError:
                # its forks die with it, by SIGKILL (PR_SET_PDEATHSIG in zygote.become_worker)
                event = {"status": -signal.SIGKILL}
            if event is None:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
            self.returncode = int(event["status"])
            self.server.forget(self.id)
        return self.returncode

    def kill(self):
        """Kill the worker's process group (in namespaces, all its processes) and wait until it is reaped."""
        try:
            if self.returncode is not None or not self.server.alive():
                return  # reaped already, or gone with the template, which takes its forks along
            self.server.send({"op": "kill", "id": self.id})
        except TemplateError:
            return
        try:
            self.wait(KILL_SECONDS)
        except subprocess.TimeoutExpired:
            raise TemplateError(f"the worker template did not reap worker {self.pid} "
                                f"within {KILL_SECONDS:g} s") from None


class Template:
    """A process with torch imported that forks the workers of every `Sandbox` given it. Start it once
    (or use it as a context manager); if it dies, the next start of a worker starts a new one."""

    def __init__(self, limits: Limits, *, kit: KitProcesses = KIT_PROCESSES):
        self.limits = limits
        self.kit = kit  # where its template processes are registered (grader.sandbox.reap)
        self._server: _Server | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._owner = os.getpid()  # a forked copy of this process shares its socket: it may not use it
        self.launches = 0  # how many template processes were started, restarts included

    @property
    def pid(self) -> int | None:
        return self._server.pid if self._server is not None else None

    def start(self) -> "Template":
        """Start the template process and wait until it has imported torch (startup_seconds at most)."""
        why = unavailable()
        if why:
            raise TemplateError(why)
        with self._lock:
            if self._server is None or not self._server.alive():
                self._launch()
        return self

    def _launch(self):
        if self._server is not None:
            self._server.close()
            self._server = None
        self._server = _Server(self.limits.startup_seconds, self.kit)
        self.launches += 1

    def spawn(self, job: ForkJob, fds: tuple[int, int, int]) -> Forked:
        """Fork a worker that becomes `job`: `fds` are the request pipe's read end, the response pipe's
        write end and the output file."""
        with self._lock:
            if os.getpid() != self._owner:
                raise TemplateError("a worker template serves the process that made it, not a fork of that process")
            if self._server is None:
                raise TemplateError("the worker template is not started")
            if not self._server.alive():
                self._launch()
            server = self._server
            assert server is not None
            id = next(self._ids)
        server.send(job.message(id), fds)
        reply = server.await_event(id, ("pid", "error"), self.limits.startup_seconds)
        if reply is None:
            raise TemplateError(f"the worker template did not fork a worker{server.tail()}")
        if "error" in reply:
            raise TemplateError(f"the worker template could not fork a worker: {reply['error']}")
        return Forked(server, id, int(reply["pid"]))

    def close(self):
        with self._lock:
            if self._server is not None:
                if os.getpid() == self._owner:
                    self._server.close()
                else:  # a fork's copy: the template, its folder and its forks are the owner's
                    self._server.sock.close()
                self._server = None

    def __enter__(self) -> "Template":
        return self.start()

    def __exit__(self, *exc):
        self.close()
