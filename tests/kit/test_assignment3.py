"""Assignment 3 end to end: the reference, the stubs, one-bug submissions, bugs of assignment2 not charged here."""

import pytest

from tests.kit.conftest import assert_loses_only_in, full_marks, grade_json, mutant, scores
from tests.kit.test_assignment2 import FUSED_PROJECTION

SUB, ENC, DEC = "assignment3/sublayer.py", "assignment3/encoder.py", "assignment3/decoder.py"
TRANSFORMER = "assignment3/transformer.py"


BUGS = {
    "post_norm_wired_as_pre_norm": (SUB, [("        if self.norm_first:\n", "        if not self.norm_first:\n")],
                                    "ResidualConnection"),
    "encoder_layer_skips_the_mask": (ENC, [("self.self_attn(x, x, x, src_mask)", "self.self_attn(x, x, x)")],
                                     "EncoderLayer"),
    "encoder_missing_final_norm": (ENC, [("return self.norm(x) if self.norm_first else x", "return x")], "Encoder"),
    "cross_attention_fed_the_decoder_input_as_keys": (
        DEC, [("self.cross_attn(x, memory, memory, src_mask)", "self.cross_attn(x, x, x, None)")], "DecoderLayer"),
    "decoder_final_norm_always": (DEC, [("return self.norm(x) if self.norm_first else x", "return self.norm(x)")],
                                  "Decoder"),
    "forward_without_padding_mask": (TRANSFORMER, [("src_mask = make_pad_mask(src, self.pad_idx)  # (B, 1, 1, S)",
                                                    "src_mask = None")], "Transformer"),
    "padding_rows_not_zeroed": (TRANSFORMER, [("self.src_embed.token.embedding.weight[pad_idx].zero_()", "pass")],
                                "Transformer"),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_bug_costs_points_in_its_component_only(tmp_path, bug):
    file, edits, component = BUGS[bug]
    report = grade_json(mutant(tmp_path, {file: edits}), "assignment3")
    assert_loses_only_in(report, component)
    broken = next(c for c in report["components"] if c["name"] == component)
    failed = [t for t in broken["tests"] if t["status"] != "passed"]
    assert failed and all(t["message"] for t in failed), broken


def test_bugs_in_assignment2_cost_nothing_in_assignment3(tmp_path):
    """Softmax over the wrong dim and an off-by-one causal mask live in assignment2: assignment3 keeps every
    point, its failing checks set aside by the isolated checks on the reference's parts."""
    tree = mutant(tmp_path, {"assignment2/attention.py": [("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")],
                             "assignment2/masks.py": [(".tril()[None, None]", ".tril(-1)[None, None]")]})
    report = grade_json(tree, "assignment3")
    assert scores(report) == full_marks(report)
    set_aside = {c["name"] for c in report["components"] for t in c["tests"] if t["reason"] == "dependency"}
    assert {"EncoderLayer", "DecoderLayer", "Transformer"} <= set_aside, set_aside


def test_a_bug_in_a_layer_is_not_charged_to_the_stacks_or_the_transformer(tmp_path):
    report = grade_json(mutant(tmp_path, {DEC: [("self.cross_attn(x, memory, memory, src_mask)",
                                                 "self.cross_attn(x, x, x, None)")]}), "assignment3")
    for name in ("Decoder", "Transformer"):
        c = next(c for c in report["components"] if c["name"] == name)
        assert c["score"] == c["max_score"]
        assert any(t["reason"] == "dependency" for t in c["tests"]), c


def test_a_fused_projection_gets_full_marks_in_assignment3(tmp_path):
    report = grade_json(mutant(tmp_path, {"assignment2/multi_head_attention.py": FUSED_PROJECTION}), "assignment3")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
