"""What course.toml forbids a component costs that component everything, and nothing elsewhere.

Each test is one run of the smallest assignment that shows it (the source scan's own cases and the
no-false-positive sweep over the kit's correct trees need no grading run: tests/kit/unit/test_forbidden.py).
"""

import pytest

from tests.kit.conftest import full_marks, grade_json, mutant, scores
from tests.kit.forbidden_trees import ATT, LN, MHA, SELF_TESTS, TRAINING, with_self_test
from tests.kit.sandbox import test_torch_backed

LN_BODY = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
           "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n"
           "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta  # (..., d_model)\n")
LN_MODULE = ("        norm = torch.nn.LayerNorm(x.size(-1), eps=self.eps)\n"
             "        norm.weight, norm.bias = self.gamma, self.beta\n"
             "        return norm(x)\n")
LN_GETATTR = ('        layer_norm = getattr(torch.nn.functional, "layer" + "_norm")  # no forbidden name here\n'
              "        return layer_norm(x, (x.size(-1),), self.gamma, self.beta, self.eps)\n")
MHA_WRAPPED = ("        B, T_q, _ = q.shape\n",
               "        nn.MultiheadAttention(self.d_model, self.n_heads, batch_first=True)(q, k, v)\n"
               "        B, T_q, _ = q.shape\n")
LS_BODY = ("        log_probs = F.log_softmax(logits.float(), dim=-1)  # (N, V)\n",
           "        return F.cross_entropy(logits.float(), targets, ignore_index=self.pad_idx,\n"
           "                               label_smoothing=self.smoothing)\n"
           "        log_probs = F.log_softmax(logits.float(), dim=-1)  # (N, V)\n")


def found(report: dict, component: str) -> list[dict]:
    return next(c for c in report["components"] if c["name"] == component)["forbidden"]


def assert_zeroed_only(report: dict, component: str, what: str, how: str):
    """`component` scores 0 for `what`, found as `how`; every other component keeps full marks."""
    got, full = scores(report), full_marks(report)
    assert got[component] == 0, got
    assert {(f["what"], f["how"]) for f in found(report, component)} >= {(what, how)}, found(report, component)
    assert all(f["where"].startswith(f"{report['assignment']}/") for f in found(report, component))
    others = {n: s for n, s in got.items() if n != component and s != full[n]}
    assert not others, f"points lost outside {component}: {others}"


@pytest.mark.parametrize("body, what", [(test_torch_backed.LAYER_NORM_F[0][1], "torch.nn.functional.layer_norm"),
                                        (LN_MODULE, "torch.nn.LayerNorm")], ids=["F.layer_norm", "nn.LayerNorm"])
def test_layer_norm_built_on_torch_is_zeroed(tmp_path, body, what):
    report = grade_json(mutant(tmp_path, {LN: [(LN_BODY, body)]}), "assignment1")
    assert_zeroed_only(report, "LayerNorm", what, "source")
    assert what in {f["what"] for f in found(report, "LayerNorm") if f["how"] == "executed"}


def test_computed_getattr_is_caught_running_and_flagged_in_the_source(tmp_path):
    tree = mutant(tmp_path, {LN: [(LN_BODY, LN_GETATTR)]})
    report = grade_json(tree, "assignment1")
    assert_zeroed_only(report, "LayerNorm", "torch.nn.functional.layer_norm", "executed")
    layer_norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
    # the lines of LN_GETATTR in the mutated file: the getattr, then the call
    line = (tree / LN).read_text().splitlines().index(LN_GETATTR.splitlines()[0]) + 1
    assert layer_norm["forbidden"] == [{"what": "torch.nn.functional.layer_norm", "where": f"{LN}:{line + 1}",
                                        "how": "executed"}]
    assert layer_norm["flagged"] == [{"what": "getattr with a computed name", "where": f"{LN}:{line}",
                                      "how": "source"}]


def test_attention_via_torch_sdpa_is_zeroed_and_multi_head_attention_keeps_its_points(tmp_path):
    # the result is the solution's; multi-head attention runs it (the hit is the attention's, where it is made)
    tree = mutant(tmp_path, {ATT: [("    return weights @ v, weights",
                                    "    torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
                                    "    return weights @ v, weights")]})
    report = grade_json(tree, "assignment2")
    assert_zeroed_only(report, "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention",
                       "executed")


def test_multi_head_attention_wrapping_torch_is_zeroed(tmp_path):
    report = grade_json(mutant(tmp_path, {MHA: [MHA_WRAPPED]}), "assignment2")
    assert_zeroed_only(report, "MultiHeadAttention", "torch.nn.MultiheadAttention", "source")
    assert {f["what"] for f in found(report, "MultiHeadAttention") if f["how"] == "executed"} == {
        "torch.nn.MultiheadAttention", "torch.nn.functional.multi_head_attention_forward"}


def test_label_smoothing_by_cross_entropy_is_zeroed(tmp_path):
    report = grade_json(mutant(tmp_path, {TRAINING: [LS_BODY]}), "assignment4")
    assert_zeroed_only(report, "LabelSmoothingLoss", "torch.nn.functional.cross_entropy(label_smoothing)", "source")


def test_a_graded_tree_with_a_self_test_keeps_full_marks(tmp_path):
    report = grade_json(with_self_test(tmp_path, LN, SELF_TESTS["layer_norm_checked_against_F_layer_norm"][2]),
                        "assignment1")
    assert scores(report) == full_marks(report) and not found(report, "LayerNorm")
