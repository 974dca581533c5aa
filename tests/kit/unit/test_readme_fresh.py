"""The README's set-up block (issue 53), read from README.md as the fresh-clone test reads it, is the
three steps that test knows: a venv, PyTorch's pinned CPU build installed with uv, and a first grade
(the set-up run on a stock Debian 12: tests/kit/container/test_readme_fresh.py)."""

from grader.authoring.torch_pin import TORCH
from tests.kit.readme_setup import setup_lines


def test_the_setup_block_is_the_three_steps_this_test_knows():
    lines = setup_lines()
    assert len(lines) == 3 and lines[0].startswith("python3 -m venv .venv"), lines
    assert "--torch-backend=cpu" in lines[1] and f"torch=={TORCH}" in lines[1], lines[1]
    assert "grade assignment1 --submission solutions" in lines[2], lines[2]
    # the kit's install names the pin too: where the uv line fails, pip must not take a newer torch
    assert f"torch=={TORCH}" in lines[2].split("&&")[0], lines[2]
