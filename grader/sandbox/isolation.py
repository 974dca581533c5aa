"""Which isolation the submission's process gets: the highest tier of three that this machine allows.

"namespaces" (Linux, where unprivileged user namespaces are allowed): the worker runs under
`grader/sandbox/child/jail.py`, in a minimal root of its own: the Python installation and a few
system paths read-only, a size-capped tmpfs for everything it may write, no network, no SysV IPC
shared with anyone, and a PID namespace whose processes all die with it.
"seccomp" (Linux where namespaces are refused: Docker's default profile, Gradescope, Ubuntu 24.04+,
Colab): the worker confines itself before the submission's code runs (`grader/sandbox/child/
confine.py`): a seccomp filter (no new socket, no signal outside its group, no ptrace, no namespaces) and,
where the kernel has Landlock, reads only the Python installation, system paths and its staged
copy, and writes only its own folder.
"process" (macOS, kernels without seccomp): a process with resource limits only.
In every tier, when the grader is root the submission runs as a user of its own (`sandbox_user`).

`[limits] isolation` in course.toml picks "auto" (the highest tier that works here), or requires
one of the three; the environment variable GRADER_ISOLATION overrides it.
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
from collections.abc import Sequence
from pathlib import Path

from grader.course_table import ConfigError
from grader.limits import Limits

JAIL = Path(__file__).resolve().parent / "child" / "jail.py"
CONFINE = JAIL.with_name("confine.py")
ROOT = "/scratch"  # the submission's writable folder, inside
TIERS = ("namespaces", "seccomp", "process")  # strongest first
MODES = ("auto", *TIERS)
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
    """The tier course.toml (or GRADER_ISOLATION) asks for, or with "auto" the highest this machine
    allows; a tier asked for by name that this machine refuses is a ConfigError saying why."""
    wanted = os.environ.get(ENV_VAR) or limits.isolation
    if wanted not in MODES:
        raise ConfigError(f"{ENV_VAR}={wanted!r}: expected one of {', '.join(MODES)}")
    if wanted == "process":
        return _reachable_as_user("process")
    why = unavailable()
    if wanted == "namespaces":
        if why:
            raise ConfigError(f"isolation = \"namespaces\" is asked for, but this machine refuses them: {why}")
        return "namespaces"
    if wanted == "auto" and not why:
        return "namespaces"
    confined = confinement()
    if "error" in confined:
        if wanted == "seccomp":
            raise ConfigError(f"isolation = \"seccomp\" is asked for, but this machine refuses it: {confined['error']}")
        return _reachable_as_user("process")
    return _reachable_as_user("seccomp")


def _reachable_as_user(tier: str) -> str:
    """`tier`, where the submission's user (a root grader's: sandbox_user) can reach its staged files
    in the temporary folder; a ConfigError saying what to change where it cannot (a private TMPDIR)."""
    folder = Path(tempfile.gettempdir())
    if os.geteuid() != 0 or _reachable_by_others(folder):
        return tier
    raise ConfigError(f"TMPDIR={folder} is closed to other users, and the {tier} tier runs the submission as a "
                      f"user of its own, who could not reach its files: set TMPDIR to a folder every user may "
                      f"cross (chmod o+x {folder}, or a folder under /tmp)")


def describe(tier: str) -> str:
    """What `tier` keeps from the submission's process here, in a line of reports (68 columns)."""
    if tier == "namespaces":
        return "namespaces: no network, a root and process IDs of its own"
    if tier == "seccomp":
        abi = confinement().get("landlock", 0)
        if abi:
            return f"seccomp + Landlock {abi}: no network or ptrace, reads only its files"
        who = "its own user" if os.geteuid() == 0 else "the grading user"
        return f"seccomp: no network or ptrace; reads what {who} may (no Landlock)"
    if tier == "process":
        return "process: resource limits only" + (", as a user of its own" if os.geteuid() == 0 else "")
    return tier


def protects_course(tier: str, secret: Sequence[Path] = ()) -> str:
    """Why the submission's process could read the course in `tier` ("" where it cannot): it can in
    the process tier; in the seccomp tier without Landlock, as another user than the grading user, it
    can read what every user may, so `secret` (the course's reference and suites) must be out of
    other users' reach (a folder on the way without o+x)."""
    if tier == "namespaces" or tier == "seccomp" and confinement().get("landlock", 0) > 0:
        return ""
    if tier == "seccomp" and os.geteuid() == 0:
        open_to_all = [str(p) for p in secret if _reachable_by_others(Path(p))]
        if not open_to_all:
            return ""
        return (f"seccomp without Landlock, and {open_to_all[0]} is readable by every user "
                f"(chmod o-rwx a folder above it)")
    if tier == "seccomp":
        return "seccomp without Landlock runs as the grading user, who can read the course"
    return "the process tier has resource limits only"


def _reachable_by_others(path: Path) -> bool:
    try:
        path = path.resolve()
        return all(os.stat(folder).st_mode & 0o001 for folder in [*reversed(path.parents), path] if folder.is_dir())
    except OSError:
        return False


def sandbox_user() -> int | None:
    """The uid (and gid) a submission runs as when the grader is root; None otherwise (it runs as the
    grading user, who is not root)."""
    if os.geteuid() != 0:
        return None
    # never the same uid twice in this grader's life (they wrapped every 256: a process that outlived
    # its grading shared the 257th sandbox's uid): 4,096 per pid in each of two ranges above USERS,
    # each sandbox's processes killed at its end (Sandbox.close)
    n = next(_users)
    if n >= 2 * 4096:
        raise RuntimeError("this grader has run 8,192 sandboxes, all the uids it has; start a new one")
    return USERS * (1 + n // 4096) + ((os.getpid() % 2**18) << 12) + n % 4096


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


@functools.cache
def confinement() -> dict:
    """What the seccomp tier holds here: {"landlock": ABI (0: none), "why": why none}, or {"error":
    why the tier cannot be used}. A child applies it, as a worker would, and tries a socket and a
    file it must not read; once per grader process (about 0.1 s)."""
    if sys.platform != "linux":
        return {"error": f"not Linux ({sys.platform})"}
    folder = Path(tempfile.mkdtemp(prefix="grade-probe-"))
    try:
        (folder / "outside").write_text("")
        (folder / "spec.json").write_text(json.dumps(confine_spec([], [], outside=str(folder / "outside"),
                                                                  scratch_mb=0)))
        proc = subprocess.run([sys.executable, "-I", "-B", str(CONFINE), "probe", str(folder / "spec.json")],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr.strip().splitlines() or [f"status {proc.returncode}"])[-1]
            return {"error": f"the probe failed: {tail}"}
        result = json.loads(lines[-1])
        if "leak" in result:
            return {"error": f"the filter did not hold: {result['leak']}"}
        return result
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return {"error": str(e)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def confine_spec(read: list[str], write: list[str], protect: Sequence[int] = (), outside: str = "",
                 scratch_mb: int = Limits.scratch_mb) -> dict:
    """What the worker's confine.confine applies: it reads read_only() and `read`, writes `write`
    (stopped past `scratch_mb` MiB there: 0 for no watcher), signals only its own group."""
    return {"read": [*read_only(), "/proc", *read], "write": write, "protect": list(protect), "outside": outside,
            "scratch_mb": scratch_mb}


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
