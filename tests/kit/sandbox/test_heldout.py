"""The diagnosis on bugs it was not built from (tests/kit/heldout.py), graded afresh: a few cheap held-out
trees fail as heldout_record.json says they did, which holds the record to what grading says now, and a
placement failure is diagnosed with the line that made the CPU tensor (the share named, run on the
record: tests/kit/unit/test_heldout.py)."""

import pytest

from grader import load_course
from tests.kit.conftest import ROOT, grade_report, mutant
from tests.kit.heldout import (
    HELDOUT,
    diagnosed,
    record_fixture,  # noqa: F401 (the fixture `record`)
)


@pytest.mark.parametrize("name", ["ln_without_affine", "temb_scale_after_position", "ffn_linear1_without_bias"])
def test_a_held_out_bug_graded_afresh_fails_as_recorded(tmp_path, record, name):
    report = grade_report(mutant(tmp_path, HELDOUT[name].patches), HELDOUT[name].assignment)
    failing = {t.id: (t.outcome.status, t.outcome.message, t.outcome.details.looks_like)
               for c in report.components for t in c.checks if t.tier == "public" and t.outcome.status != "passed"}
    was = {i: (o["status"], o["message"], o["details"].get("looks_like", ""))
           for i, o in record[name]["failing"].items()}
    assert failing == was, "the record is stale: run python -m tests.kit.heldout"
    named = {c.name: c.diagnosis.bug for c in report.components if c.diagnosis}
    assert named == diagnosed(load_course(ROOT / "course.toml"), name, record[name])
    assert set(named) == {HELDOUT[name].component}


def test_a_placement_failure_is_diagnosed_with_the_line_that_made_the_cpu_tensor(tmp_path):
    """make_causal_mask(T) called without a device inside make_tgt_mask: the line named is make_tgt_mask's
    call, not the line in make_causal_mask that made the tensor (make_causal_mask builds on the device
    it is given: it passes its own checks)."""
    name = "tgt_mask_causal_part_on_the_cpu"
    report = grade_report(mutant(tmp_path, HELDOUT[name].patches), HELDOUT[name].assignment)
    said = {c.name: c.diagnosis for c in report.components if c.diagnosis}
    assert set(said) == {"make_tgt_mask"}, said
    line = next(i for i, text in enumerate((ROOT / "solutions/assignment2/masks.py").read_text().splitlines(), 1)
                if "causal = make_causal_mask(tgt.size(1)" in text)
    assert said["make_tgt_mask"].where == f"assignment2/masks.py:{line}", said
    assert "make_causal_mask(tgt.size(1))" in said["make_tgt_mask"].line
