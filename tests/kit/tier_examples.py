"""A helper class whose method reaches a process through another method: an example for the tests of
tests/kit/tiering.py (tests/kit/unit/ and sandbox/test_unit_tiers.py)."""

from tests.kit.conftest import run_grade


class _Steps:
    def step(self):
        return run_grade("--help")

    def test_like(self):
        return self.step()
