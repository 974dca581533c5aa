"""Every need of tests/kit/needs.py (Chromium, Docker, root) says how to get it, and an unknown one is
refused (the skip where it is missing and the failure under CI, run for real:
tests/kit/sandbox/test_needs.py)."""

import pytest

from tests.kit import needs


def test_every_need_says_how_to_get_it():
    assert set(needs.HOW) == set(needs.CHECKS)
    with pytest.raises(ValueError, match="what: 'gpu'"):
        needs.unavailable("gpu")
