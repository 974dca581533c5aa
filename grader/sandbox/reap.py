"""Ending every process of a sandbox: those below its worker, found in /proc, and, under a root
grader, every process of its uid."""

import os
import signal


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
