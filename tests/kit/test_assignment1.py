"""Assignment 1 end to end: the reference, the stubs, one-bug submissions."""

import pytest

from tests.kit.conftest import SOLUTIONS, assert_loses_only_in, grade_json, mutant


def test_json_report_has_the_fields_of_the_interface(solution_reports):
    report = solution_reports("assignment1")
    assert {"assignment", "submission", "score", "max_score", "components"} <= set(report)
    assert report["submission"] == str(SOLUTIONS)
    names = [c["name"] for c in report["components"]]
    assert names == ["LayerNorm", "PositionwiseFeedForward", "PositionalEncoding", "TokenEmbedding",
                     "TransformerEmbedding"]
    for c in report["components"]:
        assert {"name", "score", "max_score", "tests"} <= set(c)
        for t in c["tests"]:
            assert {"id", "status", "hidden", "message"} <= set(t)
            assert t["status"] in {"passed", "failed", "error", "timeout", "skipped"}


# One classic bug each: (file, old, new, the component that must lose points).
BUGS = {
    "layer_norm_unbiased_variance": ("assignment1/layer_norm.py", "unbiased=False", "unbiased=True", "LayerNorm"),
    "layer_norm_eps_outside_sqrt": ("assignment1/layer_norm.py", "torch.sqrt(var + self.eps)",
                                    "(torch.sqrt(var) + self.eps)", "LayerNorm"),
    "feed_forward_no_relu": ("assignment1/feed_forward.py", "F.relu(self.linear1(x))", "self.linear1(x)",
                             "PositionwiseFeedForward"),
    "positional_encoding_sin_cos_swapped": ("assignment1/positional_encoding.py", "torch.sin(", "torch.cos(",
                                            "PositionalEncoding"),
    "token_embedding_no_scale": ("assignment1/embedding.py", "* math.sqrt(self.d_model)", "", "TokenEmbedding"),
    "transformer_embedding_no_position": ("assignment1/embedding.py", "return self.position(self.token(x))",
                                          "return self.token(x)", "TransformerEmbedding"),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_bug_costs_points_in_its_component_only(tmp_path, bug):
    file, old, new, component = BUGS[bug]
    report = grade_json(mutant(tmp_path, {file: [(old, new)]}), "assignment1")
    assert_loses_only_in(report, component)
    broken = next(c for c in report["components"] if c["name"] == component)
    assert any(t["status"] == "failed" and t["message"] for t in broken["tests"]), broken


def test_a_bug_in_a_part_is_not_charged_to_the_component_built_on_it(tmp_path):
    """TransformerEmbedding wired right on a broken TokenEmbedding keeps its points (hidden tier)."""
    report = grade_json(mutant(tmp_path, {"assignment1/embedding.py": [("* math.sqrt(self.d_model)", "")]}),
                        "assignment1")
    composite = next(c for c in report["components"] if c["name"] == "TransformerEmbedding")
    assert composite["score"] == composite["max_score"]
    assert any(t["reason"] == "dependency" and "not counted here" in t["message"] for t in composite["tests"])
