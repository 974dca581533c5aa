"""A container that refuses Linux namespaces, for real: the seccomp filter Docker's default profile
applies to them (unshare and setns refused, clone refused with a namespace flag, clone3 answered
"not implemented" so that the C library falls back to clone), installed in a child process before
it starts `grade`.

    subprocess.run([...], preexec_fn=refuse_namespaces)

Every process below it inherits the filter, so the grader's own probe (grader.sandbox.isolation.
unavailable) meets the refusal a Gradescope or CI container gives. x86-64 Linux only (`SUPPORTED`).
"""

import ctypes
import errno
import functools
import platform
import struct
import sys
from collections.abc import Callable

SUPPORTED = sys.platform == "linux" and platform.machine() == "x86_64"

AUDIT_ARCH_X86_64 = 0xC000003E
NR_CLONE, NR_UNSHARE, NR_SETNS, NR_CLONE3 = 56, 272, 308, 435
NR_PRCTL, NR_SECCOMP, NR_LANDLOCK = 157, 317, (444, 445, 446)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
LD_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
NR, ARCH, ARG0 = 0, 4, 16  # offsets in seccomp_data (ARG0: its low half)


def program(landlock: bool = True, seccomp: bool = True) -> list[tuple[int, int, int, int]]:
    """(code, jump if true, jump if false, k) of the filter; jumps count instructions after the next
    one. Without `landlock`: the kernel has none (ENOSYS), without `seccomp`: no filter can be
    added below this one (EINVAL, as a kernel built without seccomp filters answers)."""
    refused = [(NR_UNSHARE, errno.EPERM), (NR_SETNS, errno.EPERM), (NR_CLONE3, errno.ENOSYS)]
    refused += [] if landlock else [(nr, errno.ENOSYS) for nr in NR_LANDLOCK]
    refused += [] if seccomp else [(NR_SECCOMP, errno.ENOSYS)]
    on_argument = [(NR_CLONE, JSET, NAMESPACE_FLAGS, errno.EPERM)]
    on_argument += [] if seccomp else [(NR_PRCTL, JEQ, PR_SET_SECCOMP, errno.EINVAL)]
    ops = [(LD_ABS, 0, 0, ARCH), (JEQ, 0, 0, AUDIT_ARCH_X86_64), (LD_ABS, 0, 0, NR)]  # another ABI: allowed
    for nr, error in refused:
        ops += [(JEQ, 0, 1, nr), (RET, 0, 0, ERRNO | error)]
    for nr, test, value, error in on_argument:
        ops += [(JEQ, 0, 3, nr), (LD_ABS, 0, 0, ARG0), (test, 0, 1, value), (RET, 0, 0, ERRNO | error),
                (LD_ABS, 0, 0, NR)]
    ops.append((RET, 0, 0, ALLOW))
    ops[1] = (JEQ, 0, len(ops) - 3, AUDIT_ARCH_X86_64)
    return ops


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def refuse_namespaces(landlock: bool = True, seccomp: bool = True) -> None:
    """Install the filter in this process (and so in all it starts); raises OSError where refused.
    `landlock`, `seccomp`: whether those are left to the processes below (see `program`)."""
    ops = program(landlock, seccomp)
    code = b"".join(struct.pack("HBBI", *op) for op in ops)
    filter = _Program(len(ops), code)
    libc = ctypes.CDLL(None, use_errno=True)
    for args in ((PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                 (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(filter), 0, 0)):
        if libc.prctl(*[ctypes.c_ulong(a) for a in args]) != 0:
            raise OSError(ctypes.get_errno(), "prctl")


def refusing(*, landlock: bool = True, seccomp: bool = True) -> Callable[[], None]:
    """A preexec_fn: namespaces refused, and Landlock or further seccomp filters too where False."""
    return functools.partial(refuse_namespaces, landlock, seccomp)
