"""Every assignment: the reference gets full marks, the generated stubs get nothing."""

import pytest

from tests.kit.conftest import ROOT, grade_json

COMPONENTS = {
    "assignment1": ["LayerNorm", "PositionwiseFeedForward", "PositionalEncoding", "TokenEmbedding",
                    "TransformerEmbedding"],
    "assignment2": ["scaled_dot_product_attention", "make_pad_mask", "make_causal_mask", "make_tgt_mask",
                    "MultiHeadAttention"],
    "assignment3": ["ResidualConnection", "EncoderLayer", "Encoder", "DecoderLayer", "Decoder", "Transformer"],
    "assignment4": ["Vocab", "collate", "LabelSmoothingLoss", "noam_lr", "train_epoch", "greedy_decode"],
}
MAX_SCORE = {"assignment1": 40, "assignment2": 40, "assignment3": 60, "assignment4": 50}


@pytest.mark.parametrize("assignment", sorted(COMPONENTS))
def test_solutions_get_full_marks_in_both_tiers(solution_reports, assignment):
    report = solution_reports(assignment)
    assert report["score"] == report["max_score"] == MAX_SCORE[assignment]
    assert [c["name"] for c in report["components"]] == COMPONENTS[assignment]
    assert all(t["status"] == "passed" for c in report["components"] for t in c["tests"])
    assert any(t["hidden"] for c in report["components"] for t in c["tests"])  # the hidden tier ran too
    assert not any(c["diagnosis"] for c in report["components"])


@pytest.mark.parametrize("assignment", sorted(COMPONENTS))
def test_stubs_get_nothing_and_every_component_is_not_attempted(assignment):
    report = grade_json(ROOT / "assignments", assignment)
    assert report["score"] == 0
    assert [c["name"] for c in report["components"]] == COMPONENTS[assignment]
    assert {c["status"] for c in report["components"]} == {"not attempted"}
    assert all(t["reason"] == "not_attempted" for c in report["components"] for t in c["tests"])
    assert not any(c["diagnosis"] for c in report["components"])
