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
import platform
import struct
import sys

SUPPORTED = sys.platform == "linux" and platform.machine() == "x86_64"

AUDIT_ARCH_X86_64 = 0xC000003E
NR_CLONE, NR_UNSHARE, NR_SETNS, NR_CLONE3 = 56, 272, 308, 435
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
LD_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2

# (code, jump if true, jump if false, k): jumps count instructions after the next one
PROGRAM = [
    (LD_ABS, 0, 0, 4),                          # 0: seccomp_data.arch
    (JEQ, 0, 7, AUDIT_ARCH_X86_64),             # 1: another ABI: allow (9)
    (LD_ABS, 0, 0, 0),                          # 2: seccomp_data.nr
    (JEQ, 6, 0, NR_UNSHARE),                    # 3: -> EPERM (10)
    (JEQ, 5, 0, NR_SETNS),                      # 4: -> EPERM (10)
    (JEQ, 5, 0, NR_CLONE3),                     # 5: -> ENOSYS (11)
    (JEQ, 0, 2, NR_CLONE),                      # 6: not clone: allow (9)
    (LD_ABS, 0, 0, 16),                         # 7: clone's flags (args[0], low half)
    (JSET, 1, 0, NAMESPACE_FLAGS),              # 8: a namespace flag -> EPERM (10)
    (RET, 0, 0, ALLOW),                         # 9
    (RET, 0, 0, ERRNO | errno.EPERM),           # 10
    (RET, 0, 0, ERRNO | errno.ENOSYS),          # 11
]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def refuse_namespaces() -> None:
    """Install the filter in this process (and so in all it starts); raises OSError where refused."""
    code = b"".join(struct.pack("HBBI", *op) for op in PROGRAM)
    program = _Program(len(PROGRAM), code)
    libc = ctypes.CDLL(None, use_errno=True)
    for args in ((PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                 (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0)):
        if libc.prctl(*[ctypes.c_ulong(a) for a in args]) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
