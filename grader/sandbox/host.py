"""The grader's side of the trust boundary: a worker process per submission, with limits.

The submission's files are copied (regular files on a whitelist only) into a scratch
directory and imported there by `grader.sandbox.child.worker` in a child started with `python -I`,
a clean environment, resource limits and a process group of its own; on Linux, also in
namespaces of its own (`grader.sandbox.isolation`). A request that outlives its deadline kills
the whole group (in namespaces, every process the child started); the next request starts a
fresh child. With a `grader.sandbox.template.Template`, the child is a fork of a process that has
imported torch already, made into the same worker with the same isolation; a sandbox given none
starts one of its own at its first restart, for the restarts that follow. What a request ends in
besides an answer is `grader.sandbox.faults`; ending every process of a sandbox, `grader.sandbox.reap`.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.limits import Limits
from grader.results import Fault, Reason
from grader.sandbox import isolation
from grader.sandbox.answers import Answers
from grader.sandbox.faults import StudentError, WorkerFault, doing, staged_files
from grader.sandbox.limits import environment, preexec, rlimits
from grader.sandbox.reap import (
    KIT_PROCESSES,
    KitProcesses,
    adopt_orphans,
    kill_descendants,
    kill_orphans,
    kill_user,
    start_time,
)
from grader.sandbox.spare import Spare
from grader.sandbox.stage import stage
from grader.sandbox.template import ForkJob

if TYPE_CHECKING:
    from grader.sandbox.template import Forked, Template

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.child.worker import main; main()"


class Sandbox(Answers):
    """One submission's worker process, restarted after each fault; forked by `template` where one is given."""

    student_seconds = 0.0  # what the submission's requests took, in all: the grader's work answering their asks too
    grader_seconds = 0.0  # of which the grader's own work answering asks (kept apart, charged all the same)
    asks = 0  # requests for reference parts the worker made, in all
    asks_now = 0  # and in the request being answered
    interrupted = False  # by Ctrl-C: the worker is killed and no request is sent again

    def __init__(self, submission: Path, files: dict[str, list[str]], limits: Limits, *,
                 template: "Template | None" = None, gpu: bool = False, kit: KitProcesses = KIT_PROCESSES):
        self.limits = limits
        self.kit = kit  # where its workers are registered (no orphans of its own), its templates' too
        self.gpu = gpu  # it may use a CUDA device (see rlimits)
        self.template = template
        self.own_template: Template | None = None  # started at the first restart, where none was given
        self.spare = Spare(limits, kit)  # that template, begun while a request that may hang still runs
        self.created = time.monotonic()
        self.isolation = isolation.choose(limits)  # "namespaces", "seccomp" or "process"
        if self.isolation != "namespaces":  # no PID namespace: orphans of its processes come here (reap)
            adopt_orphans()
        self.user = isolation.sandbox_user()  # as root, the submission's uid and gid: not root's
        self.dir = Path(tempfile.mkdtemp(prefix="grade-"))
        self.staged = stage(submission, files, self.dir)
        self.staged_files = staged_files(self.dir / "submission")  # what a timeout's frames may be read from
        (self.dir / "jail").mkdir()  # where the launcher builds the namespaces' root
        self.home = self.dir  # the process sandbox's HOME and folder
        if self.isolation == "seccomp" or self.user is not None and self.isolation == "process":
            # it writes only in a folder of its own (Landlock's one writable path, in the seccomp tier);
            # its user reads the staged files (the group's bits)
            self.home = self.dir / "home"
            self.home.mkdir(mode=0o700)
            if self.user is not None:
                os.chown(self.dir, 0, self.user)
                self.dir.chmod(0o750)
                os.chown(self.home, self.user, self.user)
        # answers the worker's requests for reference parts (grader.suite.parts.serve)
        self.on_ask: Callable[[Any], Any] | None = None
        self.output = self.dir / "output.txt"
        self.output.touch()
        self.proc: subprocess.Popen[bytes] | Forked | None = None
        self.faults: list[Fault] = []  # each restart of the worker, in order
        self.check = ""  # the check running (grader.suite.plugin), which a fault names
        self.restarts = 0

    def start(self):
        if self.restarts == 1 and self.template is None:
            # a fault seldom comes alone (a hang or a crash recurs in each check of its component): later
            # restarts fork from a template rather than each import torch again
            self.template = self.own_template = self.spare.take()
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        self.started = time.monotonic()
        # the worker becomes the sandbox's user itself in the process sandbox (jail.become), once it
        # has imported what it needs: the Python installation may lie where only root can read
        # (pyenv under /root); in namespaces the jail makes it that user
        become = ""
        if self.isolation == "namespaces":  # a fresh tmpfs each start: its own folder, pycache included
            here, pycache, cwd = isolation.ROOT, f"{isolation.ROOT}/pycache", self.dir
            env = environment(here)
        else:
            here, pycache, cwd = str(self.dir), tempfile.mkdtemp(dir=self.home, prefix="pycache-"), self.home
            env = environment(str(self.home))
            if self.user is not None:
                os.chown(pycache, self.user, self.user)
                become = str(self.user)
        confine = ""
        if self.isolation == "seccomp":  # applied by the worker to itself (grader.sandbox.child.confine)
            env["TMPDIR"] = str(self.home)  # its one writable folder
            confine = json.dumps(isolation.confine_spec([here], [str(self.home)], [os.getpid(), os.getpgrp()],
                                                        scratch_mb=self.limits.scratch_mb))
        try:
            if self.template is not None:
                jail = isolation.spec(self.dir, self.limits.scratch_mb, [], env, self.user) \
                    if self.isolation == "namespaces" else None
                with open(self.output, "ab") as out:
                    self.proc = self.template.spawn(ForkJob(cwd=cwd, here=here, pycache=pycache, become=become,
                                                            confine=confine, env=env,
                                                            orig_argv=[sys.executable, "-I", "-B", "-c", BOOT],
                                                            rlimits=rlimits(self.limits, self.gpu), jail=jail),
                                                    fds=(req_r, resp_w, out.fileno()))
            else:
                argv = [sys.executable, "-I", "-B", "-c", BOOT, here, str(req_r), str(resp_w), pycache, become, confine]
                if self.isolation == "namespaces":
                    argv = isolation.command(self.dir, self.limits.scratch_mb, argv, env, self.user)
                with open(self.output, "ab") as out:
                    self.proc = subprocess.Popen(
                        argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=cwd, env=env,
                        pass_fds=(req_r, resp_w), start_new_session=True, preexec_fn=preexec(self.limits, self.gpu))
        finally:
            os.close(req_r)
            os.close(resp_w)
        self.req, self.resp = req_w, resp_r
        if isinstance(self.proc, subprocess.Popen):
            self.kit.add(self.proc.pid)  # a child in a session of its own that is no orphan (reap.orphans)
        self.since = start_time(self.proc.pid) or 0  # the orphans adopted since are this sandbox's
        self.here = here  # the folder the worker sees the submission in, as its frames name it
        self.ready = False

    def _await_ready(self):
        if self.proc is None:
            self.start()
        if not self.ready:
            # counted from the worker's launch, however long this process took to ask
            self._receive(self.limits.startup_seconds, self.limits.where("startup_seconds"), "starting the worker",
                          since=self.started)
            self.ready = True

    def request(self, message: dict, timeout: float | None = None, why: str | None = None):
        """Send one request and return the worker's answer; raise StudentError or WorkerFault.

        `timeout`: this request's own deadline in seconds, instead of the course's timeout_seconds;
        `why`: what a timeout's message says of that deadline (default: set in its grading suite)."""
        from grader.sandbox.child import protocol  # imports torch: not at module level, so the worker can start first
        if self.interrupted:  # Ctrl-C: what the checks' teardown asks of the worker is not waited for
            raise KeyboardInterrupt
        try:
            self._await_ready()
            try:
                protocol.write_all(self.req, protocol.encode(message))
            except (BrokenPipeError, OSError):
                self._fault(Reason.CRASH, self._death("before the request"))
            if timeout:
                seconds, where = timeout, why or "this check's own timeout, set in its grading suite"
            else:
                seconds, where = self.limits.timeout_seconds, self.limits.where("timeout_seconds")
            self.asks_now = 0
            reply = self._receive(seconds, where, doing(message))
        except KeyboardInterrupt:
            # the worker may be in a loop of the submission's: killed now, not after its deadline
            self.interrupted = True
            self._kill()
            raise
        if "error" in reply:
            e = reply["error"]
            raise StudentError(str(e.get("type")), [str(x) for x in e.get("mro", [])],
                               str(e.get("message")), [str(x) for x in e.get("where", [])])
        return reply["ok"]

    def _death(self, when: str) -> str:
        proc = self.proc
        if proc is None:
            return f"the submission's process was gone {when}"
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        code = proc.returncode
        self._kill()
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            why = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)",
                   "SIGKILL": " (killed, possibly out of memory)"}.get(name, "")
            return f"the submission's process died with {name}{why} {when}"
        return f"the submission's process exited with status {code} {when}"

    def _fault(self, kind: Reason, detail: str, where: list[str] | None = None):
        self._kill()
        fault = WorkerFault(kind, detail, self.check, where)
        self.faults.append(fault.fault)
        raise fault

    def _kill(self):
        if self.proc is None:
            return
        # what it started in a session of its own (out of its process group) first, while they are still
        # its descendants: once it is dead they are orphans that nothing ties to this sandbox
        kill_descendants(self.proc.pid)
        if isinstance(self.proc, subprocess.Popen):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        else:  # the template's fork: the template kills its group and reaps it, so no pid is reused before
            self.proc.kill()
        for fd in (self.req, self.resp):
            try:
                os.close(fd)
            except OSError:
                pass
        self.kit.discard(self.proc.pid)
        # a double fork's orphan, adopted here: killed once the worker can make no more
        kill_orphans(self.since, self.kit)
        self.proc = None
        self.restarts += 1
        if self.user is not None:  # as root: whatever runs as its uid, wherever it went (never reused)
            kill_user(self.user)

    def renew(self) -> None:
        """End the worker and whatever it started: the next request starts a fresh one (a fork of the
        template, where there is one), which has run nothing of the submission, as after a fault that
        no check owns (grader.grading.known_parts runs the parts of other assignments in one)."""
        self._kill()

    def read_output(self, start: int, limit: int) -> tuple[str, int]:
        """What the submission printed since byte `start` (at most `limit` bytes), and the new end."""
        end = self.output.stat().st_size
        if end < start:  # it truncated its own output (os.ftruncate(1, 0)): what it wrote since starts at 0
            start = 0
        with open(self.output, "rb") as f:
            f.seek(start)
            data = f.read(min(end - start, limit))
        text = data.decode("utf-8", "replace")
        if end - start > limit:
            text += f"\n... ({end - start - limit} more bytes not shown)"
        return text, end

    def close(self):
        if self.proc is not None:
            self._kill()
        elif self.user is not None:
            kill_user(self.user)
        if self.own_template is not None:
            self.own_template.close()
        self.spare.close()
        shutil.rmtree(self.dir, ignore_errors=True)

