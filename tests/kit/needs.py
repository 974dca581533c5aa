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
from functools import cache

import pytest

HOW = {
    "chromium": "apt-get install chromium (Debian's package; Ubuntu's is a snap that headless runs refuse)",
    "docker": "apt-get install docker.io debootstrap, then run the tests as root (they start `dockerd --bridge=none` "
              "where it is not running)",
    "root": "run the tests as root (sudo -E env PATH=\"$PATH\" python -m pytest ...), as CI does",
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


# each in a function of its own: tests/kit/tiering.py reads a test's tier from the program names in the
# code it reaches, and a test that needs Chromium reaches no Docker
CHECKS = {"root": _root, "chromium": _chromium, "docker": _docker}


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
