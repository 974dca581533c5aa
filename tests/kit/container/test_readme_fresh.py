"""The README's set-up on a stock Debian 12, from a fresh clone (issue 53): its lines run as written in a
container of Debian's archive (tests/kit/docker.py: debootstrap's minbase with python3 and python3-venv,
the packages a Debian user installs for `python3 -m venv`), with the host's network and pip settings, as
a newcomer's machine would have them.

The set-up block is read from README.md, not copied here, so that the test runs what a reader runs. Its
second line installs PyTorch's CPU build with uv from PyTorch's own index; where this machine cannot
reach that index (a sandbox that reaches only the package registries), the line must fail while
fetching, never on its own words (an option uv does not know, a version it cannot parse), and the test
installs the same pinned version with pip from the registry instead, says so, and runs the rest. Then
the README's test command, in the tier that starts no process (the container runs no Docker, Chromium
or root-only test: those are skipped there, each saying why, and CI runs them)."""

import re
import subprocess
import uuid

import pytest

from grader.authoring.torch_pin import TORCH
from tests.kit import docker
from tests.kit.conftest import ROOT
from tests.kit.readme_setup import setup_lines

KIT = "/root/kit"
# uv's words where it could not fetch what it was asked for (the network, not the command)
UNREACHABLE = re.compile(r"Failed to fetch|error sending request|dns error|Could not connect|failed to lookup",
                         re.IGNORECASE)
# uv's words where it did not understand the command itself
MISREAD = re.compile(r"unexpected argument|invalid value|error: unrecognized|Failed to parse", re.IGNORECASE)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A container with a fresh clone of the kit's committed tree at KIT: its name."""
    image = docker.base_image()
    clone = tmp_path_factory.mktemp("clone") / "kit"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(clone)], check=True, timeout=300)
    name = f"kit-readme-{uuid.uuid4().hex[:12]}"
    docker.docker("create", "--name", name, "--network", "host", *docker.pip_settings(), image, "sleep", "infinity")
    try:
        docker.docker("start", name)
        docker.docker("cp", f"{clone}/.", f"{name}:{KIT}")
        yield name
    finally:
        docker.docker("rm", "-f", name, check=False)


def run(name: str, lines: list[str], timeout: float = 1500) -> subprocess.CompletedProcess:
    """`lines` in one bash in KIT, as a reader pastes them into a terminal (stopping at the first that fails)."""
    return docker.docker("exec", "-w", KIT, name, "bash", "-ec", "\n".join(lines), check=False, timeout=timeout)


@pytest.mark.xdist_group("docker")
@pytest.mark.needs("docker")
def test_a_fresh_clone_on_debian_12_installs_as_the_readme_says_grades_and_passes_its_unit_tier(fresh):
    venv, torch_line, install_and_grade = setup_lines()
    activate = ". .venv/bin/activate"
    made = run(fresh, [venv])
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    torch = run(fresh, [activate, torch_line])
    said = torch.stdout + torch.stderr
    if torch.returncode != 0:
        assert not MISREAD.search(said) and UNREACHABLE.search(said), f"the README's torch line failed:\n{said[-3000:]}"
        print(f"this machine cannot reach PyTorch's CPU index; torch=={TORCH} from pip's registry instead")
        torch = run(fresh, [activate, f"pip install --quiet torch=={TORCH}"])
        assert torch.returncode == 0, torch.stdout[-3000:] + torch.stderr[-3000:]
    graded = run(fresh, [activate, install_and_grade])
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    assert re.search(r"score\s+40 / 40", graded.stdout), graded.stdout[-3000:]
    # the README's test command, the unit tier of it: the container has no Chromium, Docker or root-only
    # machinery to offer the other tiers (CI runs them)
    command = re.search(r"```bash\n(python -m pytest[^\n]*)\n```", (ROOT / "README.md").read_text())
    assert command is not None, "README.md names no test command"
    tested = run(fresh, [activate, f"{command.group(1)} -m unit -q -p no:cacheprovider"])
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-3000:]
    assert re.search(r"\d+ passed", tested.stdout), tested.stdout[-2000:]
