"""No new process or program from the worker once the submission's code can run (issue 51).

What a process that the submission starts runs, nothing of the kit's sees: the forbidden-API recorder,
the placement watch and the stand-ins are this process's, so `F.layer_norm` run in a fork and piped
back counted as if never called. The worker refuses new processes, and programs in its place, from
before it imports the submission until it ends (a request's threads included); what the kit starts
itself (the seccomp tier's watcher, the namespaces' init) is started before.

- Where the kernel takes a seccomp filter (Linux with libseccomp: every tier there, the process tier
  included), fork, vfork, execve, execveat and a clone that makes no thread fail with EPERM, and clone3
  with ENOSYS so that the C library makes its threads with clone (torch's and the kit's still start).
  Whatever the way (os.fork, subprocess, multiprocessing, ctypes, a C extension), the kernel says no.
- Everywhere, an audit hook (sys.addaudithook: nothing in the process can remove one) refuses Python's
  own ways: os.fork and forkpty, posix_spawn, exec and spawn, system, subprocess.Popen, and the C
  functions that start one or run a program when ctypes looks them up by name. Without the filter
  (macOS, a kernel without seccomp filters, no libseccomp) a way past Python (a function pointer found
  otherwise, `_posixsubprocess`) is not refused: the source scan flags those tools, and the sandbox
  ends what they start with the worker (grader.sandbox.reap).
"""

import errno
import sys

CLONE_THREAD = 0x00010000
# the audit events of Python's ways to start a process or run a program in this one's place
EVENTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system",
                    "subprocess.Popen", "os.startfile"})
# the C functions that do, as ctypes looks them up ("ctypes.dlsym")
SYMBOLS = frozenset({"fork", "vfork", "_Fork", "__fork", "clone", "clone3", "__clone", "__clone2", "syscall",
                     "posix_spawn", "posix_spawnp", "system", "popen", "forkpty", "daemon", "execv", "execve",
                     "execvp", "execvpe", "execl", "execle", "execlp", "fexecve"})
# what the student reads in a failed check: "your code raised PermissionError: [Errno 1] ..."
MESSAGE = "the grader starts no other process for your code: {} is refused while it grades"


def _audit(event: str, args: tuple) -> None:
    if event in EVENTS:
        raise PermissionError(errno.EPERM, MESSAGE.format(event))
    if event == "ctypes.dlsym" and len(args) > 1 and isinstance(args[1], str) and args[1] in SYMBOLS:
        raise PermissionError(errno.EPERM, MESSAGE.format(f"{args[1]} through ctypes"))


def refuse() -> bool:
    """Refuse new processes and programs from here on, in this process and every thread of it. True
    where the kernel refuses them too (the seccomp filter loaded), False where only Python's ways are."""
    kernel = _filter()
    sys.addaudithook(_audit)
    return kernel


def _filter() -> bool:
    if sys.platform != "linux":
        return False
    try:
        from grader.sandbox.child.confine import import_pyseccomp

        seccomp = import_pyseccomp()
        f = seccomp.SyscallFilter(seccomp.ALLOW)
        f.set_attr(seccomp.Attr.CTL_TSYNC, 1)  # the threads already started: the warm-up's, OpenMP's
        refuse = seccomp.ERRNO(errno.EPERM)
        for name in ("fork", "vfork", "execve", "execveat"):
            try:
                f.add_rule(refuse, name)
            except (RuntimeError, ValueError, OSError):  # not a system call of this architecture (aarch64: fork)
                pass
        f.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
        f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # its flags lie behind a pointer: clone instead
        f.load()
    except Exception:  # no libseccomp, or a kernel that takes no filter: the audit hook alone
        return False
    return True
