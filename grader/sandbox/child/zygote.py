"""The worker template: one trusted process that imports torch once and forks each worker from it.

`grader.sandbox.template` starts it from its own copies of this file and of jail.py, in a folder
that no worker sees (`python -I -B -c BOOT ZYGOTE CONTROL_FD MODULE...`), with the workers'
environment, so that what torch reads at import is what a worker started by `grader.sandbox.host`
reads. It imports the MODULEs (what a worker imports from the Python installation before it first
answers), then serves. It runs no code of any submission and imports nothing of the grader: the
worker imports `grader.sandbox.child` after the fork, from the submission's own read-only staged
copy, because those modules know their place (`record` finds the submission beside itself,
`fixtures` imports `grader.training` through its package's path) and a copy imported here would
be in the wrong one. That import costs a few hundredths of a second; torch's costs seconds.

A fork runs the steps `Sandbox.start` gives a fresh process: a session of its own, /dev/null,
the output file and the two pipes as its only descriptors, the resource limits, and in
namespaces `jail.launch` (its worker does not exec, so it drops its capabilities itself); then
the worker's environment, argv and sys.path, and `grader.sandbox.child.worker.main`. The
template takes no limits: it is trusted, and the limits are the worker's.

Control socket (SOCK_SEQPACKET, one JSON object a message):
- grader to template: {"op": "spawn", "id", "cwd", "here", "pycache", "become", "confine", "env", "orig_argv",
  "rlimits", "jail"} with
  three descriptors (the request pipe's read end, the response pipe's write end, the output file);
  {"op": "kill", "id"}.
- template to grader: {"ready": pid, "threads": n} once torch is imported; {"id", "pid"} or
  {"id", "error"} for a spawn; {"id", "status"} when the fork has ended, as Popen.returncode says it.
  What is left of its process group is killed before it is reaped, so its id is never reused while
  a kill could reach it.
"""

import ctypes
import fcntl
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import traceback
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
REQ_FD, RESP_FD = 3, 4  # the worker's ends of its pipes, as its argv names them
SET_BY_IMPORT: dict[str, str] = {}  # environment variables the preloaded modules set
MAX_MESSAGE = 1 << 20


class Rlimit(ctypes.Structure):
    """struct rlimit (rlim_t is unsigned long on Linux); set through libc rather than the resource
    module, which a fresh worker has not imported: a fork's modules are a fresh worker's."""
    _fields_ = [("soft", ctypes.c_ulong), ("hard", ctypes.c_ulong)]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# under a name of its own: the worker imports `grader.sandbox.child` from its own copy
jail = _load("_grader_jail", Path(__file__).with_name("jail.py"))


def serve(control: socket.socket) -> tuple[dict, list[int]] | None:
    """The template's loop; returns in a fork only, with its job, or None when the grader has gone."""
    return _Template(control).serve()


class _Template:
    """The template's side of the control socket, and the forks it has not reaped."""

    def __init__(self, control: socket.socket):
        self.control = control
        self.children: dict[int, tuple[int, int]] = {}  # id -> (pid, pidfd)

    def send(self, message: dict):
        try:
            self.control.send(json.dumps(message).encode())
        except OSError:  # the grader has gone: the next receive says so
            pass

    def reap(self, id: int):
        pid, pidfd = self.children.pop(id)
        _killpg(pid)
        status = os.waitpid(pid, 0)[1]
        os.close(pidfd)
        self.send({"id": id, "status": os.waitstatus_to_exitcode(status)})

    def serve(self) -> tuple[dict, list[int]] | None:
        # one thread, so that each fork is whole; the grader refuses a template with more
        self.send({"ready": os.getpid(), "threads": len(os.listdir("/proc/self/task"))})
        while True:
            pidfds = {pidfd: id for id, (_, pidfd) in self.children.items()}
            readable = select.select([self.control.fileno(), *pidfds], [], [])[0]
            for fd in readable:
                if fd in pidfds:
                    self.reap(pidfds[fd])
            if self.control.fileno() not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(self.control, MAX_MESSAGE, 3)
            if not data:
                for id in list(self.children):
                    self.reap(id)
                return None
            job = self.answer(data, fds)
            if job is not None:
                return job

    def answer(self, data: bytes, fds: list[int]) -> tuple[dict, list[int]] | None:
        """One request; in a fork it spawned, that fork's job."""
        try:
            message = json.loads(data)
            id = int(message["id"])
        except (ValueError, KeyError, TypeError):
            for fd in fds:
                os.close(fd)
            return None
        if message.get("op") == "kill":
            if id in self.children:
                _killpg(self.children[id][0])  # reaped when its pidfd says it has ended
            return None
        if message.get("op") != "spawn" or len(fds) != 3 or id in self.children:
            for fd in fds:
                os.close(fd)
            self.send({"id": id, "error": "a malformed spawn request"})
            return None
        return self.spawn(id, message, fds)

    def spawn(self, id: int, message: dict, fds: list[int]) -> tuple[dict, list[int]] | None:
        for stream in (sys.stdout, sys.stderr):  # nothing of the template's for the worker to print
            stream.flush()
        try:
            pid = os.fork()
        except OSError as e:
            self.send({"id": id, "error": f"fork: {e}"})
            pid = -1
        if pid == 0:
            self.control.close()
            return message, fds
        for fd in fds:
            os.close(fd)
        if pid > 0:
            self.children[id] = (pid, os.pidfd_open(pid))
            self.send({"id": id, "pid": pid})
        return None


def _killpg(pid: int):
    """The fork and its process group; the fork by its pid too, in case it has not made the group yet
    (an unreaped child of the template: its pid names no one else)."""
    for kill in (os.kill, os.killpg):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _arrange(fds: list[int]):
    """0: /dev/null, 1 and 2: the output file, REQ_FD and RESP_FD: the pipes; no other descriptor
    of the template's (its control socket, the other workers' pidfds) stays open."""
    req, resp, out = fds
    null = os.open(os.devnull, os.O_RDWR)
    # above the targets first, so that no dup2 below overwrites a descriptor still to be placed
    placed = [fcntl.fcntl(fd, fcntl.F_DUPFD, RESP_FD + 1) for fd in (null, out, out, req, resp)]
    for target, fd in enumerate(placed):
        os.dup2(fd, target)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > RESP_FD:
            try:
                os.close(int(name))
            except OSError:  # the listing's own descriptor
                pass


def become_worker(job: dict, fds: list[int], template: int):
    """In the fork: the process `Sandbox.start` would have started, then the worker itself. Returns
    when the worker's loop ends; its exit is the interpreter's, as in a worker of its own."""
    try:
        # dumpable again: the template is not (no process of the grading user can trace it), and
        # /proc/self of a process that is not belongs to root, uid_map included
        jail._check(jail.libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")
        jail._check(jail.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        if os.getppid() != template:  # the template died before the prctl
            os._exit(1)
        os.setsid()
        _arrange(fds)
        os.chdir(job["cwd"])
        for which, soft, hard in job["rlimits"]:
            jail._check(jail.libc.setrlimit(which, ctypes.byref(Rlimit(soft, hard))), "setrlimit")
        if job["jail"] is not None:
            jail.launch(job["jail"])  # returns in the worker, inside the namespaces
            jail.drop_capabilities()
    except BaseException:
        traceback.print_exc()  # into the submission's output once _arrange has run, else the template's log
        os._exit(1)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # init left SIG_DFL, a fresh Python has this
    as_if_started_here(job)
    from grader.sandbox.child.worker import main

    main()


def as_if_started_here(job: dict):
    """What a worker started on its own would have: its environment, argv and sys.path, and what
    the preloaded modules computed at import from where and as whom the process runs (its folder,
    HOME, user), computed again here. tests/kit/sandbox/test_template.py compares the modules' globals."""
    os.environ.clear()
    os.environ.update(job["env"])
    for name, value in SET_BY_IMPORT.items():
        os.environ[name] = value
    sys.argv = ["-c", job["here"], str(REQ_FD), str(RESP_FD), job["pycache"], job["become"], job["confine"]]
    sys.orig_argv = [*job["orig_argv"], *sys.argv[1:]]
    sys.path.insert(0, job["here"])
    site = sys.modules.get("site")
    if site is not None:  # from HOME
        for name in ("USER_BASE", "USER_SITE"):
            setattr(site, name, None)
        site.getusersitepackages()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:  # the folder it found at its first use, from TMPDIR (the seccomp tier's own)
        tempfile.tempdir = None  # type: ignore[attr-defined]
    process = sys.modules.get("multiprocessing.process")
    if process is not None:  # the folder it was imported in
        process.ORIGINAL_DIR = os.path.abspath(os.getcwd())  # type: ignore[attr-defined]
    inductor = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    if inductor is not None and "TORCHINDUCTOR_CACHE_DIR" in SET_BY_IMPORT:
        # named after the user, and made, at torch._dynamo's import: the namespace's user, in its /tmp
        del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        inductor.cache_dir()


def record_function_once(torch) -> None:
    """Run what torch imports on the first `record_function` (an optimizer's step opens one): a fork
    runs as a user of its own under a root grader, who cannot import from an installation in a
    folder closed to other users (a venv under /root), where torch's lazy import fails and logs a
    warning into the grading's output. grader.sandbox.child.placement.watch.warm does the same in a
    fresh worker, so that both have the same modules."""
    with torch.autograd.profiler.record_function("template"):
        pass


def main():
    jail._check(jail.libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl")
    before = dict(os.environ)
    for name in sys.argv[3:]:  # torch first: the reason for the template
        importlib.import_module(name)
    SET_BY_IMPORT.update({k: v for k, v in os.environ.items() if before.get(k) != v})
    if "torch" in sys.modules:
        record_function_once(sys.modules["torch"])
    # Out of the collector's reach: a collection in a fork would otherwise write to every object
    # torch made, copying the whole heap (about 0.3 s). They live as long as the worker anyway;
    # gc.get_objects() in a worker lists only what was made after the fork.
    gc.freeze()
    template = os.getpid()
    control = socket.socket(fileno=int(sys.argv[2]))
    job = serve(control)
    if job is None:
        return
    become_worker(*job, template)
