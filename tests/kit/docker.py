"""A container made as Gradescope makes its autograders', for real: Docker's daemon (Debian's
docker.io, started here where it is not running), an image of Debian's archive (debootstrap
--variant=minbase with python3, then `docker import`; kept in the daemon's store, so built once per
machine), Docker's default seccomp profile (which refuses namespaces), root inside, and the host's
network, as Gradescope's containers have one.

pip inside installs what setup.sh asks for the way pip does here: the host's pip settings (PIP_*
variables, the folders they name, its certificate bundle) are handed in read-only."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

IMAGE = "transformer-kit-test/debian-minbase-python3:bookworm"
PACKAGES = "python3,python3-venv,libseccomp2,util-linux"


def docker(*args: str, timeout: float = 600, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}: status {proc.returncode}\n{proc.stdout[-2000:]}"
                             f"{proc.stderr[-2000:]}")
    return proc


def unavailable() -> str:
    """Why no container can be made here ("" where one can); starts Debian's dockerd as root where
    it is installed and not running (with --bridge=none: containers use the host's network)."""
    if not shutil.which("docker"):
        return "no docker command"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0:
        return ""
    if os.geteuid() != 0 or not shutil.which("dockerd"):
        return "the Docker daemon is not running (and this test does not start it as this user)"
    log = open(Path(tempfile.gettempdir()) / "kit-dockerd.log", "ab")
    subprocess.Popen(["dockerd", "--bridge=none"], stdout=log, stderr=log, start_new_session=True)
    for _ in range(60):
        time.sleep(0.5)
        if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0:
            return ""
    return "dockerd did not start (see kit-dockerd.log in the temporary folder)"


def base_image() -> str:
    """The Debian image, built where the daemon does not have it yet (about a minute)."""
    if docker("image", "inspect", IMAGE, check=False).returncode == 0:
        return IMAGE
    if not shutil.which("debootstrap"):
        raise AssertionError("debootstrap is not installed (apt-get install debootstrap)")
    root = Path(tempfile.mkdtemp(prefix="kit-rootfs-"))
    try:
        # the mirror is debootstrap's own default for Debian
        proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={PACKAGES}", "bookworm", str(root)],
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        docker("import", "-", IMAGE, stdin=tar.stdout)
        assert tar.wait() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return IMAGE


def pip_settings() -> list[str]:
    """`docker create` options that give pip inside what pip has here: PIP_* variables and the
    files they and the site configuration name, read-only at the same paths."""
    options, paths = [], {"/etc/xdg/pip", "/etc/pip.conf"}
    for name, value in os.environ.items():
        if name.startswith("PIP_"):
            options += ["-e", f"{name}={value}"]
            paths |= {part for part in value.split() if part.startswith("/")}
    for config in ("/etc/xdg/pip/pip.conf", "/etc/pip.conf"):
        if os.path.isfile(config):
            for line in Path(config).read_text().splitlines():
                _, _, value = line.partition("=")
                paths |= {part.removeprefix("file://") for part in value.split() if "/" in part}
    for path in sorted(p for p in paths if p.startswith("/") and os.path.exists(p)):
        options += ["-v", f"{path}:{path}:ro"]
    return options
