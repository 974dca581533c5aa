"""What the submission's process starts with: its resource limits and its whole environment."""

import os
import resource

from grader.limits import Limits


def rlimits(limits: Limits, gpu: bool = False) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for each limit of the submission's process, in the order they are set.

    `gpu`: the process may use a CUDA device, whose driver reserves far more address space than
    it uses: the address space is then unlimited, and memory_mb bounds the data segment and private
    writable mappings (RLIMIT_DATA, which the driver's reserved, inaccessible mappings do not count
    against), so host memory stays bounded all the same."""
    mb = 1 << 20
    space = resource.RLIM_INFINITY if gpu else limits.memory_mb * mb
    return [(resource.RLIMIT_AS, space, space),
            (resource.RLIMIT_DATA, limits.memory_mb * mb, limits.memory_mb * mb),
            (resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1),
            (resource.RLIMIT_FSIZE, limits.file_size_mb * mb, limits.file_size_mb * mb),
            (resource.RLIMIT_NPROC, limits.processes, limits.processes),
            (resource.RLIMIT_CORE, 0, 0)]


def preexec(limits: Limits, gpu: bool):
    """A preexec_fn that sets rlimits(limits, gpu) in the child."""

    def apply():
        for which, soft, hard in rlimits(limits, gpu):
            resource.setrlimit(which, (soft, hard))
    return apply


def environment(home: str) -> dict[str, str]:
    """The whole environment of the submission's process."""
    # LOGNAME: getpass.getuser() (torch._dynamo calls it at import) reads it before the password
    # database, which a namespaces root has none of for the worker's uid
    return {"PATH": os.defpath, "HOME": home, "LANG": "C.UTF-8", "LOGNAME": "student", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1"}
