"""What the seccomp tier cannot bound by a mount or a namespace, watched from outside the worker's
reach: a process the worker starts before it confines itself (grader.sandbox.child.confine),
in a session of its own (the submission's signals reach only the worker's group), of the grading
user where the submission becomes another one, dying with the worker (PDEATHSIG).

- The scratch quota: once the writable folders hold more than `scratch_mb` MiB or SCRATCH_FILES
  entries, the worker's group is stopped and the folders emptied (within what it writes in
  EVERY seconds, 16 MiB a file by RLIMIT_FSIZE).
- Memory across processes: where the machine's memory is a cgroup's (a Docker container,
  Gradescope's 768 MB), the worker's processes together may hold what was free when it started,
  less a margin: RLIMIT_AS bounds each process alone, and allocations spread over several got
  the container OOM-killed, the grader with it (no results.json). Past it the group is stopped.
  The worker's oom_score_adj is 1000 (a process can raise its own, never lower it unprivileged),
  inherited by all it starts: what the watcher is too slow for, the kernel's OOM killer takes
  from the worker's processes first, never the grader.
A stop is a crash of the request running, charged to its component; the line the watcher prints
is in the submission's output. Standard library only.
"""

import ctypes
import os
import sys
import time

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
SCRATCH_FILES = 20_000  # files and folders the writable folder may hold (each costs an inode)
EVERY = 0.05
MARGIN_MB = 64
_NO_LIMIT = 1 << 60  # cgroup v1's "no limit" is 2^63 less a page


def start(folders: list[str], scratch_mb: int) -> int:
    """Start the watcher of this process's group (see the module's doc); its pid to the caller. A
    fresh interpreter, not a fork left running: a fork would keep a copy of every page of the
    worker's (torch's) that the worker then writes to, doubling its memory."""
    group = os.getpgrp()
    free = _cgroup_free()
    bound = -1 if free is None else free + _held(group)
    argv = [sys.executable, "-I", "-S", "-B", os.path.abspath(__file__), str(group), str(os.getpid()),
            str(scratch_mb), str(bound), *folders]
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the grader's pipes end with the worker alone
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # kept across exec
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")
    return pid


def watch(group: int, worker: int, scratch_mb: int, bound: int | None, folders: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its /proc/PID/mem: not for a process of the same user
    if os.getppid() != worker:  # it died before PDEATHSIG was set
        return
    while True:
        why = _over_scratch(folders, scratch_mb) or _over_memory(group, bound)
        if why:
            os.write(1, f"\nstopped: {why}\n".encode())
            libc.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)  # outlive the group, to empty what it wrote
            os.killpg(group, 9)
            _empty(folders)
            return
        time.sleep(EVERY)


def _over_scratch(folders: list[str], scratch_mb: int) -> str:
    used, entries = 0, 0
    todo = list(folders)
    while todo and entries <= SCRATCH_FILES:
        try:
            with os.scandir(todo.pop()) as found:
                for entry in found:
                    entries += 1
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    else:
                        used += entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue
    if scratch_mb and (used > scratch_mb << 20 or entries > SCRATCH_FILES):
        return f"wrote more than scratch_mb = {scratch_mb} MiB (or {SCRATCH_FILES:,} files)"
    return ""


def _over_memory(group: int, bound: int | None) -> str:
    if bound is None:
        return ""
    held = _held(group)
    if held > bound:
        return (f"its processes held {held >> 20} MiB together, more than the {bound >> 20} MiB this "
                "machine's memory limit left them")
    return ""


def _held(group: int) -> int:
    """Anonymous and shared-memory bytes of the processes in process group `group`, pages shared
    between them counted once (proportional: Pss_*; where the kernel lacks those, resident)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            if int(fields[2]) != group:  # after the command's name: state, ppid, pgrp
                continue
            total += _private(pid)
        except (OSError, ValueError, IndexError):
            continue
    return total


def _private(pid: str) -> int:
    for name, keys in (("smaps_rollup", (b"Pss_Anon:", b"Pss_Shmem:")), ("status", (b"RssAnon:", b"RssShmem:"))):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                found = [int(line.split()[1]) << 10 for line in f if line.startswith(keys)]
        except OSError:
            continue
        if found:
            return sum(found)
    return 0


def _cgroup_free() -> int | None:
    """Bytes the memory cgroup of this process has left before its limit less a margin (MARGIN_MB or
    an eighth of it), anonymous and shared memory counted (page cache is reclaimed first); None
    where there is no limit."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    for controllers, path in ((c, p) for _, c, p in lines if c in ("", "memory")):
        root = "/sys/fs/cgroup" if controllers == "" else "/sys/fs/cgroup/memory"
        limit_file, stat_keys = ("memory.max", ("anon", "shmem")) if controllers == "" else \
            ("memory.limit_in_bytes", ("total_rss", "total_shmem"))
        for folder in (f"{root}{path}", root):  # inside a container the mount is its own cgroup
            try:
                with open(f"{folder}/{limit_file}") as f:
                    text = f.read().strip()
                with open(f"{folder}/memory.stat") as f:
                    stat = dict(line.split() for line in f if line.count(" ") == 1)
            except OSError:
                continue
            if text == "max" or int(text) >= _NO_LIMIT:
                break
            margin = max(MARGIN_MB << 20, int(text) // 8)
            return max(int(text) - margin - sum(int(stat.get(k, 0)) for k in stat_keys), 0)
    return None


def _empty(folders: list[str]) -> None:
    for folder in folders:
        for top, dirs, files in os.walk(folder, topdown=False):
            for name in files + dirs:
                try:
                    (os.rmdir if name in dirs else os.unlink)(os.path.join(top, name))
                except OSError:
                    pass


if __name__ == "__main__":
    watch(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), None if sys.argv[4] == "-1" else int(sys.argv[4]),
          sys.argv[5:])
