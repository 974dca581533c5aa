"""Which isolation the submission's process gets, and the command line that starts it in namespaces.

"namespaces" (Linux, where unprivileged user namespaces are allowed): the worker runs under
`grader/sandbox/child/jail.py`, in a minimal root of its own: the Python installation and a few
system paths read-only, a size-capped tmpfs for everything it may write, no network, no SysV IPC
shared with anyone, and a PID namespace whose processes all die with it. "process" (macOS,
containers that refuse namespaces): a process of the grading user with resource limits only; of a
user of its own (`sandbox_user`) when the grader is root.

`[limits] isolation` in course.toml picks "auto" (namespaces where the kernel allows them),
"namespaces" (required) or "process"; the environment variable GRADER_ISOLATION overrides it.
"""

import functools
import glob
import itertools
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.course import ConfigError, Limits

JAIL = Path(__file__).resolve().parent / "child" / "jail.py"
ROOT = "/scratch"  # the submission's writable folder, inside
MODES = ("auto", "namespaces", "process")
ENV_VAR = "GRADER_ISOLATION"
# As root, the submission runs as a user of its own, in either isolation: Linux does not hold real
# uid 0 to RLIMIT_NPROC, and another user can neither write root's files nor signal its processes.
# One per sandbox (this process's pid, then a count), so that no two share a process count, files
# or signals; from 2^30 (pids are below 2^22), above any uid a system gives out, below 2^31.
USERS = 1 << 30
_users = itertools.count()
# What the worker needs besides the Python installation: shared libraries, the loader's cache,
# CPU and GPU topology (torch reads them at import), the harmless devices and any NVIDIA ones.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
          "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
          "/sys/devices", "/sys/bus", "/sys/class", "/sys/dev",
          "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def choose(limits: Limits) -> str:
    """"namespaces" or "process", as course.toml (or GRADER_ISOLATION) asks and this kernel allows."""
    wanted = os.environ.get(ENV_VAR) or limits.isolation
    if wanted not in MODES:
        raise ConfigError(f"{ENV_VAR}={wanted!r}: expected one of {', '.join(MODES)}")
    if wanted == "process":
        return "process"
    why = unavailable()
    if why and wanted == "namespaces":
        raise ConfigError(f"isolation = \"namespaces\" is asked for, but this machine refuses them: {why}")
    return "process" if why else "namespaces"


def sandbox_user() -> int | None:
    """The uid (and gid) a submission runs as when the grader is root; None otherwise (it runs as the
    grading user, who is not root)."""
    if os.geteuid() != 0:
        return None
    return USERS + (os.getpid() << 8) + next(_users) % 256


@functools.cache
def unavailable() -> str:
    """Why namespaces cannot be used here ("" when they can): the launcher builds a root once, as for
    a real submission, and exits. Once per grader process (about as long as starting Python)."""
    if sys.platform != "linux":
        return f"not Linux ({sys.platform})"
    stage = Path(tempfile.mkdtemp(prefix="grade-probe-"))
    try:
        for name in ("jail", "submission", "grader/sandbox/child"):
            (stage / name).mkdir(parents=True)
        shutil.copy(JAIL, stage / "grader/sandbox/child")
        proc = subprocess.run(command(stage, 1, [], {}, sandbox_user(), probe=True), capture_output=True, text=True,
                              timeout=60)
        return "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or [f"status {proc.returncode}"])[-1]
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def read_only() -> list[str]:
    """The paths the worker sees, read-only and where they are here; a path inside another is left out."""
    python = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages(),
              os.path.dirname(os.path.realpath(sys.executable))}
    paths = {*SYSTEM, *python, *glob.glob("/dev/nvidia*")}
    return sorted(p for p in paths if not any(p.startswith(q + "/") for q in paths))


def spec(stage: Path, scratch_mb: int, worker: list[str], env: dict[str, str], user: int | None,
         probe: bool = False) -> dict:
    """What the launcher builds: it runs `worker` with `env` in /scratch, a tmpfs of `scratch_mb` MiB
    that shows `stage`/submission and `stage`/grader read-only; `stage`/jail is where the root is built.
    `user`: the outside uid the worker runs as (sandbox_user), None for the grading user's own."""
    return {"stage": str(stage), "root": ROOT, "scratch_mb": scratch_mb, "read_only": read_only(),
            "argv": worker, "env": env, "user": user, "probe": probe}


def command(stage: Path, scratch_mb: int, worker: list[str], env: dict[str, str], user: int | None,
            probe: bool = False) -> list[str]:
    """The launcher's command line, for `spec`.

    The launcher is the staged copy and its spec a file beside it: init's command line, which the
    submission can read in /proc/1/cmdline, names neither the kit nor what is mounted."""
    (stage / "jail.json").write_text(json.dumps(spec(stage, scratch_mb, worker, env, user, probe)))
    return [sys.executable, "-I", "-S", "-B", str(stage / "grader/sandbox/child/jail.py"), str(stage / "jail.json")]
