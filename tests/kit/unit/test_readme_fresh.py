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

from grader.authoring.torch_pin import TORCH
from tests.kit.readme_setup import setup_lines


def test_the_setup_block_is_the_three_steps_this_test_knows():
    lines = setup_lines()
    assert len(lines) == 3 and lines[0].startswith("python3 -m venv .venv"), lines
    assert "--torch-backend=cpu" in lines[1] and f"torch=={TORCH}" in lines[1], lines[1]
    assert "grade assignment1 --submission solutions" in lines[2], lines[2]
