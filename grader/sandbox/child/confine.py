"""The "seccomp" isolation tier, applied by the worker to itself before any of the submission's code
runs: for machines that refuse namespaces (Docker's default seccomp profile, Gradescope, Ubuntu
24.04's AppArmor rule, Colab), where the process tier alone would leave the network, ptrace and
every file the grading user can read within the submission's reach.

- Landlock, where the kernel has it: the filesystem reads only what `spec["read"]` lists (the
  Python installation, system libraries, the staged copy) and writes only `spec["write"]` (its own
  folder); from ABI 4 no TCP bind or connect, from ABI 6 no signal to a process outside the
  sandbox nor a connection to an abstract UNIX socket outside it. Landlock also bars ptrace and
  /proc/PID/mem of any process outside the sandbox.
- A seccomp filter (libseccomp, through pyseccomp): new sockets of every family (the worker's channel
  is the pipes it was started with: a pathname UNIX socket would reach a session bus, ssh-agent or
  docker.sock), ptrace and cross-process memory, namespaces and mounts, io_uring (whose operations
  would bypass the filter), BPF, perf events, keyrings, userfaultfd, modules, kexec, clocks and the
  like fail with EPERM; clone3 answers ENOSYS, as Docker's profile does, so that the C library falls back to clone,
  whose namespace flags the filter can see. setsid and setpgid fail too: every process the
  submission starts stays in the worker's process group, which the grader kills at the end.
  Signals: never to the grader, -1, tkill, pidfds or a file's owner (F_SETOWN); Landlock (ABI 6)
  scopes the rest to the sandbox's processes. Where it cannot (ABI < 6), the filter lets the worker
  signal only itself and its group: a process the submission starts signals that group (kill(0))
  but not itself by its own pid, nor the worker its children by theirs (e.g. to clean up).
  Syscalls of another ABI (32-bit int 0x80, x32) kill the process: libseccomp's default for an
  architecture not added to the filter.
- `no_new_privs`, which both need: no setuid program gives privileges back.
- A watcher process (grader.sandbox.child.watcher) stops the worker's group past `spec["scratch_mb"]`
  in its writable folder, or past the memory a cgroup's limit left it (a container's), and the
  worker's oom_score_adj is 1000. Without Landlock the worker may write elsewhere too (/tmp,
  /dev/shm): not counted there.

Both are inherited by every thread (TSYNC) and every process the submission starts, and can only
be narrowed further. Standard library but for pyseccomp, which needs the system's libseccomp.so.2.

`python confine.py probe SPEC.json` applies `SPEC` and checks that it holds; the grader runs it
once per process (grader.sandbox.isolation.confinement) and prints what it says.
"""

import ctypes
import errno
import json
import os
import socket
import sys

PR_SET_NO_NEW_PRIVS = 38
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446  # every arch
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# filesystem rights (ABI 1: bits 0-12, ABI 2: REFER, ABI 3: TRUNCATE); IOCTL_DEV (ABI 5) is left
# unhandled, so device ioctls (a GPU's driver) stay as they are
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1}
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (1 << 14)  # what a rule on a file may hold
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
NET_TCP = (1 << 0) | (1 << 1)  # ABI 4: bind and connect
SCOPES = (1 << 0) | (1 << 1)  # ABI 6: abstract UNIX sockets and signals

# refused with EPERM whatever their arguments
REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm", "lookup_dcookie",
    "sethostname", "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "fanotify_init", "personality",
    # a process that leaves the worker's session or group would outlive the sandbox, which kills the
    # group: without namespaces or a uid of its own nothing else ties it to the sandbox
    "setsid", "setpgid",
)
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                   0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
MASK = 0xFFFFFFFF
F_SETOWN, IOCTL_SETOWN = (8, 15), (0x8901, 0x8902)  # F_SETOWN(_EX); FIOSETOWN, SIOCSPGRP

_libc = ctypes.CDLL(None, use_errno=True)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return result


def landlock_abi() -> tuple[int, str]:
    """The kernel's Landlock ABI version, 0 with the reason where there is none."""
    try:
        return _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION)), ""
    except OSError as e:
        why = {errno.ENOSYS: "the kernel has no Landlock (before 5.13)",
               errno.EOPNOTSUPP: "Landlock is built but turned off (boot with lsm=...,landlock)",
               errno.EPERM: "refused by a seccomp profile"}.get(e.errno or 0, str(e))
        return 0, why


def restrict_files(read: list[str], write: list[str], abi: int) -> None:
    """This process (and all it starts) reads only under `read`, writes only under `write`; from
    ABI 4 makes no TCP connection, from ABI 6 signals nothing outside its sandbox."""
    fs = FS_ABI[min(abi, 3)]
    attr = [fs, *([NET_TCP] if abi >= 4 else []), *([SCOPES] if abi >= 6 else [])]
    struct = (ctypes.c_uint64 * len(attr))(*attr)
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(struct), ctypes.c_size_t(ctypes.sizeof(struct)),
                       ctypes.c_uint32(0))
    try:
        for paths, rights in ((read, READ), (write, fs)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # a listed path this machine lacks
                try:
                    allowed = rights if os.path.isdir(path) else rights & FILE_RIGHTS
                    rule = _PathBeneath(allowed, fd)
                    _syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule),
                             ctypes.c_uint32(0))
                finally:
                    os.close(fd)
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def filter_syscalls(seccomp, protect: list[int], scoped: bool = False) -> None:
    """Load the seccomp filter (`seccomp`: the pyseccomp module) on every thread of this process.
    `scoped`: Landlock scopes signals to the sandbox (ABI 6); where not, only this process and its
    group may be signalled (`_signals`). `protect`: processes (the grader, its template) that no
    signal may reach either way."""
    f = seccomp.SyscallFilter(seccomp.ALLOW)
    f.set_attr(seccomp.Attr.CTL_TSYNC, 1)
    refuse = seccomp.ERRNO(errno.EPERM)
    for name in (*REFUSED, "pidfd_open", "pidfd_send_signal", "tkill"):
        f.add_rule(refuse, name)
    # the worker talks to the grader over the pipes it was started with: no socket of any family
    # (pathname UNIX sockets reach a session bus, ssh-agent, docker.sock), nor a pair of them
    for name in ("socket", "socketpair"):
        f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), name)
    for flag in NAMESPACE_FLAGS:
        f.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for call, command in [*(("fcntl", c) for c in F_SETOWN), *(("ioctl", r) for r in IOCTL_SETOWN)]:
        f.add_rule(refuse, call, seccomp.Arg(1, seccomp.MASKED_EQ, MASK, command))  # SIGIO to a file's owner
    # kill(-1) reaches every process of the user; kill(-PGID) a whole group
    targets = {MASK, *(pid & MASK for pid in protect), *(-pid & MASK for pid in protect)}
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        for target in sorted(targets):
            f.add_rule(refuse, name, seccomp.Arg(0, seccomp.MASKED_EQ, MASK, target))
    if not scoped:
        _signals(f, refuse, os.getpid(), os.getpgrp())
    f.load()


def _signals(f, refuse, pid: int, group: int) -> None:
    """Where Landlock cannot scope signals (ABI < 6): they go only to this process (and its threads)
    and its process group, which the submission cannot leave (setsid, setpgid refused): kill and
    rt_sigqueueinfo to 0, this pid or -group; tgkill and rt_tgsigqueueinfo to this thread group.
    pid_t is 32 bits: the first argument's low half is compared, block by block (`outside`)."""
    import pyseccomp

    own = {0, pid & MASK, -group & MASK}
    for name, allowed in (("kill", own), ("rt_sigqueueinfo", own), ("tgkill", {pid}), ("rt_tgsigqueueinfo", {pid})):
        for mask, value in outside(allowed):
            f.add_rule(refuse, name, pyseccomp.Arg(0, pyseccomp.MASKED_EQ, mask, value))


def outside(allowed: set[int]) -> list[tuple[int, int]]:
    """(mask, value) blocks of 32-bit numbers that together hold every number but `allowed`: x is in
    a block where x & mask == value."""
    blocks, start = [], 0
    for stop in [*sorted(a & MASK for a in allowed), MASK + 1]:
        low = start
        while low < stop:  # the largest aligned block from `low` that ends before `stop`
            size = low & -low if low else 1 << 32
            while low + size > stop:
                size >>= 1
            blocks.append((MASK & ~(size - 1), low))
            low += size
        start = stop + 1
    return blocks


def import_pyseccomp():
    """pyseccomp, imported without ctypes.util.find_library's search where the libraries load by
    their usual names: the search runs gcc and ldconfig, 60 ms or more of every worker's start."""
    import ctypes.util

    known = {}
    for name, soname in (("seccomp", "libseccomp.so.2"), ("c", "libc.so.6")):
        try:
            ctypes.CDLL(soname)
            known[name] = soname
        except OSError:
            pass
    find = ctypes.util.find_library
    ctypes.util.find_library = lambda name: known.get(name) or find(name)
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = find
    return pyseccomp


def confine(spec: dict) -> dict:
    """Apply the tier to this process; return what holds: {"landlock": ABI or 0, "why": ...}."""
    pyseccomp = import_pyseccomp()  # first: it looks for libseccomp in files Landlock then bars

    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"no_new_privs: {os.strerror(e)}")
    abi, why = landlock_abi()
    if spec.get("scratch_mb"):  # a worker's, not the probe's: before Landlock and the user it becomes
        from grader.sandbox.child import watcher

        watcher.start(spec["write"], spec["scratch_mb"])
    if abi:
        restrict_files(spec["read"], spec["write"], abi)
    filter_syscalls(pyseccomp, spec.get("protect", []), scoped=abi >= 6)
    return {"landlock": abi, "why": why}


def _probe(spec: dict) -> dict:
    """Confine this process as `spec` says, then try what the tier must refuse."""
    state = confine(spec)
    for family in (socket.AF_INET, socket.AF_UNIX):
        try:
            socket.socket(family, socket.SOCK_STREAM).close()
            state["leak"] = f"an {family.name} socket opened"
        except OSError:
            pass
    try:
        os.kill(os.getppid(), 0)  # a signal's permission check, to the process that started this one
        state["leak"] = "its parent could be signalled"
    except OSError:
        pass
    if state["landlock"] and spec.get("outside"):
        try:
            open(spec["outside"], "rb").close()
            state["leak"] = f"{spec['outside']} could be read"
        except OSError:
            pass
    return state


if __name__ == "__main__":
    with open(sys.argv[2]) as f:
        wanted = json.load(f)
    try:
        print(json.dumps(_probe(wanted)))
    except (OSError, ImportError, RuntimeError, ValueError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
