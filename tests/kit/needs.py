"""What a few of the kit's tests need beyond `pip install -e ".[dev,plots,docs]"`: headless Chromium,
Docker (with debootstrap), root.

The README's test command passes on a machine without them: each such test is skipped there with a
reason that names what is missing and how to get it (`-rs`, in pyproject.toml's addopts, lists the
reasons at the end of a run). Under CI (the `CI` variable set, as CI sets it for .ci/run, which
installs Chromium, Docker and debootstrap and runs as root) such a test fails instead: CI runs every
tier in full, and a tool missing there is a broken CI, never a skipped test.

A test says what it needs with `@pytest.mark.needs("root")` (or a module's `pytestmark`), checked
before its fixtures run (tests/kit/conftest.py), or by calling `chromium()` for the browser's path.
"""

import os
import shutil
import stat
import sys
from functools import cache
from pathlib import Path

import pytest

HOW = {
    "chromium": "apt-get install chromium (Debian's package; Ubuntu's is a snap that headless runs refuse)",
    "docker": "apt-get install docker.io debootstrap, then run the tests as root (they start `dockerd --bridge=none` "
              "where it is not running)",
    "root": "run the tests as root (sudo -E env PATH=\"$PATH\" python -m pytest ...), as CI does",
    "git": "apt-get install git (the README's first step clones the kit with it)",
    "nobody": "apt-get install util-linux (setpriv), with the kit and its venv in folders every user may cross "
              "(not under /root), or give a container CAP_DAC_READ_SEARCH (docker run --cap-add DAC_READ_SEARCH)",
}


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def missing(what: str, why: str) -> None:
    """Skip the calling test, or fail it under CI, saying that `what` is missing (`why`) and how to get it."""
    message = f"needs {what} ({why}); to get it: {HOW[what]}"
    if in_ci():
        pytest.fail(f"CI runs every tier, and this test {message}", pytrace=False)
    pytest.skip(message)


def _root() -> str:
    return "" if os.geteuid() == 0 else f"running as uid {os.geteuid()}"


def _chromium() -> str:
    return "" if shutil.which("chromium") else "no chromium on PATH"


def _docker() -> str:
    from tests.kit import docker

    if not shutil.which("debootstrap"):  # it builds the Debian image the container tests run in
        return "no debootstrap on PATH"
    return docker.unavailable()


def _git() -> str:
    return "" if shutil.which("git") else "no git on PATH"


def _nobody() -> str:
    if shutil.which("setpriv") is None:
        return "no setpriv on PATH"
    closed = _closed()
    if closed and not _bounded(CAP_DAC_READ_SEARCH):
        return (f"{closed[0]} is in a folder closed to other users, and this process's bounding set lacks "
                "DAC_READ_SEARCH")
    return ""


# each in a function of its own: tests/kit/tiering.py reads a test's tier from the program names in the
# code it reaches, and a test that needs Chromium reaches no Docker
CHECKS = {"root": _root, "chromium": _chromium, "docker": _docker, "git": _git, "nobody": _nobody}


@cache
def unavailable(what: str) -> str:
    """Why `what` (a key of HOW) is not here, "" where it is; asked once per test process."""
    if what not in CHECKS:
        raise ValueError(f"what: {what!r} is none of {', '.join(CHECKS)}")
    return CHECKS[what]()


def require(what: str) -> None:
    """The marker `needs(what)`'s check (tests/kit/conftest.py)."""
    why = unavailable(what)
    if why:
        missing(what, why)


def chromium() -> str:
    """The path of headless Chromium; else the calling test is skipped (failed under CI), saying why."""
    require("chromium")
    exe = shutil.which("chromium")
    assert exe is not None
    return exe


def as_nobody() -> list[str]:
    """The prefix that runs a command as nobody (uid 65534) from root, by setpriv; the calling test is
    skipped (failed under CI) where nobody could not run the kit. DAC_READ_SEARCH is asked for only
    where the kit or this Python is in a folder closed to other users (pyenv's under /root): a
    container's bounding set has no such capability, and setpriv fails on asking for it."""
    require("nobody")
    prefix = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    if not _closed():
        return prefix
    return [*prefix, "--inh-caps", "+dac_read_search", "--ambient-caps", "+dac_read_search"]


def _closed() -> list[str]:
    """The kit's and this Python's folders that a user with no group in common cannot reach."""
    return [p for p in (KIT, sys.prefix, sys.base_prefix, os.path.realpath(sys.executable))
            if not _reachable_by_others(Path(p))]


KIT = str(Path(__file__).resolve().parents[2])
CAP_DAC_READ_SEARCH = 2


def _reachable_by_others(path: Path) -> bool:
    """Whether a user with no group in common searches every folder down to `path` (and reads it)."""
    path = path.resolve()
    folders = [*path.parents, path] if path.is_dir() else list(path.parents)
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in folders) and bool(
        path.stat().st_mode & stat.S_IROTH)


def _bounded(capability: int) -> bool:
    """Whether `capability` is in this process's bounding set (a container's lacks most)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) >> capability & 1)
    return False
