"""Ending every process of a sandbox: those below its worker, found in /proc; under a root grader,
every process of its uid; and, without namespaces, the orphans this process adopted as a child
subreaper (a double fork whose middle process exited: nothing else ties them to the sandbox)."""

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
_adopting: bool | None = None


class KitProcesses:
    """The processes the kit starts in sessions of their own (workers, templates, the split grading's
    helper): children of this process that are never a sandbox's orphans. Whoever starts one adds it,
    and discards it once reaped (its pid may then be an orphan's). One per grader process, `KIT_PROCESSES`: a
    subreaper's orphans are its own process's children, whichever sandbox's they were."""

    def __init__(self) -> None:
        self._pids: set[int] = set()

    def add(self, pid: int) -> None:
        self._pids.add(pid)

    def discard(self, pid: int) -> None:
        self._pids.discard(pid)

    def __contains__(self, pid: object) -> bool:
        return pid in self._pids


KIT_PROCESSES = KitProcesses()  # this process's: the default of the sandboxes and templates it starts


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux 3.4+): a process below it whose parent exits is
    reparented here rather than to init, where kill_orphans finds it. Set once per process; whether
    it took. Not inherited by the processes it starts: a submission cannot undo it."""
    global _adopting
    if _adopting is None:
        _adopting = False
        if sys.platform == "linux":
            try:
                _adopting = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                pass
    return _adopting


def _stat(pid: int) -> list[bytes] | None:
    """/proc/PID/stat's fields after the name (state, ppid, pgrp, session, ...), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()  # the name before ")" may hold anything
    except OSError:
        return None


def orphans(since: int, kit: KitProcesses) -> list[int]:
    """Children of this process (a subreaper) that it did not start: in a session other than its own
    (every process of a sandbox is: its worker starts one, which none of them can leave for this
    one), not one the kit started (in `kit`), started at or after clock tick `since` (the worker's
    start). Processes the grader runs for itself stay in its session or are in `kit`."""
    me, session, found = os.getpid(), os.getsid(0), []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        fields = _stat(pid)
        if fields is None or len(fields) < 20 or pid in kit:
            continue
        try:
            ppid, sid, start = int(fields[1]), int(fields[3]), int(fields[19])
        except ValueError:
            continue
        if ppid == me and sid != session and start >= since:
            found.append(pid)
    return found


def kill_orphans(since: int, kit: KitProcesses) -> None:
    """Kill and reap the orphans this process adopted (where adopt_orphans took) from a sandbox whose
    worker started at clock tick `since`: called once that worker is dead, so that it makes no more."""
    if not _adopting:
        return
    for _ in range(3):  # what they fork while they are killed is adopted too
        found = orphans(since, kit)
        for pid in found:
            for victim in [*descendants(pid), pid]:
                try:
                    os.kill(victim, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for pid in found:  # this process's children now: reaped here, or they stay zombies
            for _ in range(200):  # 2 s at most: one stuck in the kernel is left to be reaped later
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.01)
        if not found:
            return


def start_time(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (/proc/PID/stat)."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields is not None else None
    except (ValueError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """Every process below `root`, from /proc (none where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = int(f.read().rpartition(b")")[2].split()[1])  # the name before ")" may hold anything
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def kill_descendants(root: int) -> None:
    for _ in range(3):  # what they fork while they are killed is found by the next pass
        found = descendants(root)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not found:
            return


def kill_user(uid: int) -> None:
    """Kill every process of `uid` (the grader is root): a child that becomes that uid and signals -1,
    which is every process the uid may signal. Forked, not exec'd: over RLIMIT_NPROC (a fork bomb) an
    exec as that uid would fail."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking a threaded process: the child only signals
        pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
