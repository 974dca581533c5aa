"""Dropout in the wrong place costs points in that component only, on a dropout check, and is named.

The misplacements are entries of the course's table of classic bugs (tests/grading/bugs.py,
DROPOUT). The suites grade placement in train() mode with dropout=1.0, where nn.Dropout outputs
exact zeros whatever the random numbers, so each misplacement gives a different, fixed output:
the diagnosis tells them apart like any other bug."""

import pytest

from tests.kit.conftest import grade_one_bug
from tests.kit.mutants import BUGS, DROPOUT


@pytest.mark.parametrize("name", sorted(DROPOUT))
def test_misplaced_dropout_costs_points_in_its_component_only_and_is_named_there(tmp_path, name):
    report = grade_one_bug(tmp_path, name)
    broken = next(c for c in report["components"] if c["name"] == BUGS[name].component)
    failed = {t["id"] for t in broken["tests"] if t["status"] != "passed"}
    assert any("dropout" in check for check in failed), failed  # lost on a dropout check, not by accident
