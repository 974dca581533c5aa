"""Start the submission's worker in namespaces of its own (Linux): `python -I -S jail.py SPEC.json`.

Three processes, all of the grading user:
- this launcher, the grader's direct child: it makes new user, mount, network, IPC and PID
  namespaces and waits; killing it (the grader kills its process group) kills the rest;
- init, PID 1 of the new PID namespace: it builds a minimal root (the paths in SPEC read-only,
  a size-capped tmpfs as its folder, a fresh /proc), then starts the worker and reaps what it
  leaves; when init dies the kernel kills every process of the namespace, daemons included;
- the worker, exec'd as a non-root user of the namespace, so it holds no capabilities.
As root, a fourth, a helper outside the namespaces, maps the worker's user to an unprivileged
uid outside (`_map_from_outside`): Linux holds no process of uid 0 to RLIMIT_NPROC.

Standard library only, and trusted: nothing of the submission runs before the worker's exec.
With SPEC's "probe" set, init exits 0 once the root is built: the grader's test of whether
this kernel allows all of it.

The worker template (`grader.sandbox.child.zygote`) runs the same steps in a fork of itself,
through `launch`, and its worker goes on without an exec: `drop_capabilities` then does what
the exec does here.
"""

import ctypes
import json
import os
import select
import signal
import sys

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x8000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 0x1000, 0x4000, 0x40000
MNT_DETACH, AT_FDCWD, AT_RECURSIVE = 2, -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 1, 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (Linux 5.12)
ROOT_INSIDE, WORKER = 1000, 1001  # as root: the uids of the launcher and init, and of the worker, inside

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(result: int, what: str):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None):
    def b(s):
        return None if s is None else s.encode()
    _check(libc.mount(b(source), b(target), b(fstype), flags, b(data)), f"mount {target}")


def _read_only(target: str, recursive: bool):
    """mount_setattr keeps the flags the kernel locks on inherited mounts (a remount must repeat
    them) and, with AT_RECURSIVE, covers the mounts below `target` too."""
    attr = MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    _check(libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), target.encode(),
                        ctypes.c_uint(flags), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))),
           f"read-only {target}")


def _write(path: str, text: str):
    with open(path, "w") as f:
        f.write(text)


def _bind(path: str, new: str):
    """`path` at the same place under `new`, read-only; a symbolic link is copied as a link."""
    target = new + path
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(path):
        os.symlink(os.readlink(path), target)
        return
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        open(target, "w").close()
    _mount(path, target, None, MS_BIND | MS_REC)
    _read_only(target, recursive=True)


def build_root(spec: dict):
    """The minimal root, entered with pivot_root: the old root is detached, so not even a
    chroot escape finds the kit, the instructor's home or other submissions."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing of this reaches the grader's mounts
    os.umask(0o022)  # the folders made for the read-only paths: the worker's user may be another
    # no nested user namespace: it would give the submission capabilities, hence mounts of its own
    _write("/proc/sys/user/max_user_namespaces", "0")
    stage, new = spec["stage"], spec["stage"] + "/jail"
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    # The one writable filesystem, capped: everything the submission may write (its folder, pycache,
    # /tmp, /dev/shm, HOME) shares scratch_mb, and is gone with the namespace. First, so that a
    # read-only path under /tmp (a virtual environment there) lands on top of it, not under it.
    scratch = new + spec["root"]
    os.makedirs(scratch)
    owner = f",uid={WORKER},gid={WORKER}" if spec.get("user") is not None else ""
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['scratch_mb']}m,mode=700{owner}")
    for name in ("pycache", "tmp", "shm"):
        os.mkdir(f"{scratch}/{name}")
        if owner:
            os.chown(f"{scratch}/{name}", WORKER, WORKER)
    for name in ("submission", "grader"):
        os.mkdir(f"{scratch}/{name}")
        _mount(f"{stage}/{name}", f"{scratch}/{name}", None, MS_BIND | MS_REC)
        _read_only(f"{scratch}/{name}", recursive=True)
    os.makedirs(new + "/dev/shm", exist_ok=True)
    for outside, inside in ((f"{scratch}/tmp", "/tmp"), (f"{scratch}/shm", "/dev/shm")):
        os.makedirs(new + inside, exist_ok=True)
        _mount(outside, new + inside, None, MS_BIND)
    for path in spec["read_only"]:
        if os.path.lexists(path):
            _bind(path, new)
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                       ("stderr", "/proc/self/fd/2")):
        os.symlink(link, f"{new}/dev/{name}")
    # this PID namespace's own /proc: the grader's processes are not in it
    os.mkdir(new + "/proc")
    _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # /proc itself stays writable: CUDA's driver writes under /proc/self, and a read-only /proc fails
    # its initialisation (cudaGetDeviceCount: error 304, seen on an H100); the kernel's knobs stay
    # read-only, as Docker leaves them (max_user_namespaces above among them)
    _mount(new + "/proc/sys", new + "/proc/sys", None, MS_BIND | MS_REC)
    _read_only(new + "/proc/sys", recursive=True)
    os.chdir(new)
    _check(libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT[os.uname().machine]), b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _read_only("/", recursive=False)
    os.chdir(spec["root"])


def init(spec: dict, launcher_alive: int) -> None:
    """PID 1: build the root, start the worker, reap orphans, exit with the worker's status.
    Returns in the worker's process only."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1 ignores signals it has no handler for
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL), "prctl")
    if select.select([launcher_alive], [], [], 0)[0]:  # the launcher died before the prctl
        os._exit(1)
    build_root(spec)
    if spec.get("probe"):
        os._exit(0)
    worker = os.fork()
    if worker == 0:
        os.close(launcher_alive)  # an exec would close it; a worker that does not exec must
        if spec.get("user") is not None:  # as root: the unprivileged user outside
            os.setresgid(WORKER, WORKER, WORKER)
            os.setresuid(WORKER, WORKER, WORKER)
        return
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == worker:
            # a signal shows as 128 + its number, as in a shell; the launcher raises it again
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def launch(spec: dict) -> None:
    """Make the namespaces, start init in them and wait for it, as the launcher. Returns in the
    worker's process only, in its root and as the namespace's non-root user (still holding the
    namespace's capabilities until it execs or calls `drop_capabilities`); the launcher and init
    end in here."""
    uid, gid = os.getuid(), os.getgid()
    user = spec.get("user")
    if user is not None:  # root: the launcher's helper maps the worker's user (see _map_from_outside)
        os.setgroups([])  # root's groups would stay the worker's: setgroups is denied inside
        helper, unshared = _map_from_outside(uid, gid, user)
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID), "unshare")
    inside = uid or 1000  # not root inside: the worker's exec then drops every capability
    if user is None:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{inside} {uid} 1")
        _write("/proc/self/gid_map", f"{inside} {gid} 1")
    else:
        os.write(unshared, b"u")
        os.close(unshared)
        if os.waitstatus_to_exitcode(os.waitpid(helper, 0)[1]) != 0:
            raise OSError("the uid map of the submission's user could not be written")
    alive_r, alive_w = os.pipe()  # closed when the launcher dies, however it dies
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        try:
            init(spec, alive_r)
            return  # the worker
        except BaseException:
            import traceback  # only here: each import is start-up time

            traceback.print_exc()  # into the submission's output: a build that failed says why
        os._exit(1)
    os.close(alive_r)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code - 128 in signal.valid_signals():
        if code - 128 != signal.SIGKILL:  # no handler can be set for SIGKILL, nor need be
            signal.signal(code - 128, signal.SIG_DFL)
        os.kill(os.getpid(), code - 128)
    os._exit(code)


def _map_from_outside(uid: int, gid: int, user: int) -> tuple[int, int]:
    """As root: a helper, forked before the launcher unshares, writes the launcher's maps once it
    has: ROOT_INSIDE is root outside (the launcher and init, which build the root as root's files
    allow) and WORKER is `user`, an unprivileged uid, whom Linux holds to RLIMIT_NPROC (real uid 0
    it does not). A namespace may only map an outside uid other than its creator's from a process
    outside it that holds CAP_SETUID there. Returns the helper's pid and the pipe to wake it."""
    wake_r, wake_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        try:
            os.close(wake_w)
            if os.read(wake_r, 1):  # nothing: the launcher died first
                launcher = os.getppid()
                _write(f"/proc/{launcher}/uid_map", f"{ROOT_INSIDE} {uid} 1\n{WORKER} {user} 1")
                _write(f"/proc/{launcher}/setgroups", "deny")
                _write(f"/proc/{launcher}/gid_map", f"{ROOT_INSIDE} {gid} 1\n{WORKER} {user} 1")
                os._exit(0)
        except BaseException:
            import traceback

            traceback.print_exc()
        os._exit(1)
    os.close(wake_r)
    return helper, wake_w


def drop_capabilities() -> None:
    """What the exec of a non-root user does to the capabilities the namespace gave: none left,
    none to gain (bounding and ambient sets emptied too). For a worker that does not exec."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):  # needs CAP_SETPCAP: before the capset below
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop from the bounding set")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear the ambient set")
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits, all clear
    _check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def become(user: int) -> None:
    """Run as `user` (uid and gid), with no supplementary group: a worker started by root outside
    namespaces, before any of the submission's code runs. The import path's folders (but the first,
    the staged one) are reached through descriptors opened as root: a folder the user may read still
    imports where its parents bar the way (pyenv under /root); what lies beside them stays barred."""
    for i, folder in enumerate(sys.path[1:], 1):
        if os.path.isdir(folder):
            sys.path[i] = f"/proc/self/fd/{os.open(folder, os.O_RDONLY | os.O_DIRECTORY)}"
    os.setgroups([])
    os.setresgid(user, user, user)
    os.setresuid(user, user, user)
    # as any process of that user's: a change of uid makes it undumpable, its /proc root's
    _check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    launch(spec)
    os.execve(spec["argv"][0], spec["argv"], spec["env"])


if __name__ == "__main__":
    main()
