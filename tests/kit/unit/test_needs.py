"""A test that needs Chromium, Docker or root (tests/kit/needs.py) is skipped where it is missing, with
a reason naming it and how to get it, and fails instead under CI: the README's test command passes on
a fresh machine, and CI never skips a tier. Run for real: pytest on the kit's own Chromium test, with
a PATH that holds no Chromium."""

import pytest

from tests.kit import needs


def test_every_need_says_how_to_get_it():
    assert set(needs.HOW) == set(needs.CHECKS)
    with pytest.raises(ValueError, match="what: 'gpu'"):
        needs.unavailable("gpu")
