"""Assignment 2 end to end: the reference, the stubs, one-bug submissions, correct solutions written differently."""

import pytest

from tests.kit.conftest import assert_loses_only_in, full_marks, grade_json, mutant, scores

ATT, MASKS, MHA = "assignment2/attention.py", "assignment2/masks.py", "assignment2/multi_head_attention.py"


# One classic bug each: (file, [(old, new), ...], the component that must lose points).
BUGS = {
    "softmax_over_the_wrong_dim": (ATT, [("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")],
                                   "scaled_dot_product_attention"),
    "no_sqrt_d_k": (ATT, [(" / math.sqrt(d_k)", "")], "scaled_dot_product_attention"),
    "mask_applied_after_softmax": (ATT, [(
        "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
        "        pass\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n"
        "    if mask is not None:\n"
        "        weights = weights.masked_fill(~mask, 0.0)\n")], "scaled_dot_product_attention"),
    "mask_polarity_inverted": (ATT, [("masked_fill(~mask,", "masked_fill(mask,")], "scaled_dot_product_attention"),
    "pad_mask_polarity_inverted": (MASKS, [("(tokens != pad_idx)", "(tokens == pad_idx)")], "make_pad_mask"),
    "causal_mask_off_by_one": (MASKS, [(".tril()[None, None]", ".tril(-1)[None, None]")], "make_causal_mask"),
    "heads_split_with_the_wrong_view": (MHA, [
        (f"self.w_{n}({n}).view(B, {t}, self.n_heads, self.d_k).transpose(1, 2)",
         f"self.w_{n}({n}).view(B, self.n_heads, {t}, self.d_k)") for n, t in (("q", "T_q"), ("k", "T_k"),
                                                                               ("v", "T_k"))],
        "MultiHeadAttention"),
    "heads_merged_without_transpose": (MHA, [("out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)",
                                              "out.reshape(B, T_q, self.d_model)")], "MultiHeadAttention"),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_bug_costs_points_in_its_component_only(tmp_path, bug):
    file, edits, component = BUGS[bug]
    report = grade_json(mutant(tmp_path, {file: edits}), "assignment2")
    assert_loses_only_in(report, component)
    broken = next(c for c in report["components"] if c["name"] == component)
    failed = [t for t in broken["tests"] if t["status"] != "passed"]
    assert failed and all(t["message"] for t in failed), broken
    assert any(t.get("hint") and t.get("expected") for t in failed), failed  # a student learns what and why


def test_a_bug_in_attention_is_not_charged_to_multi_head_attention(tmp_path):
    report = grade_json(mutant(tmp_path, {ATT: [(" / math.sqrt(d_k)", "")]}), "assignment2")
    mha = next(c for c in report["components"] if c["name"] == "MultiHeadAttention")
    assert mha["score"] == mha["max_score"]
    assert any(t["reason"] == "dependency" and "not counted here" in t["message"] for t in mha["tests"])


# Correct solutions written differently must keep every point.
EINSUM_NEG_INF = [(
    "    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)\n"
    "    if mask is not None:\n"
    "        # finfo.min, not -inf: an all-blocked row becomes uniform instead of NaN\n"
    "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n"
    "    if dropout is not None:\n"
    "        weights = dropout(weights)\n"
    "    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)\n",
    "    scores = torch.einsum('...qd,...kd->...qk', q, k) * d_k ** -0.5\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(mask.logical_not(), float('-inf'))\n"
    "    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # an all-blocked row: 0/0 -> 0\n"
    "    if dropout is not None:\n"
    "        weights = dropout(weights)\n"
    "    return torch.einsum('...qk,...kd->...qd', weights, v), weights\n")]

FUSED_PROJECTION = [(
    "        q = self.w_q(q).view(B, T_q, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_q, d_k)\n"
    "        k = self.w_k(k).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)\n"
    "        v = self.w_v(v).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)\n",
    "        weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])  # (3 d_model, d_model)\n"
    "        bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])\n"
    "        if q is k and k is v:  # self-attention: one matmul, split in three\n"
    "            q, k, v = torch.nn.functional.linear(q, weight, bias).split(self.d_model, dim=-1)\n"
    "        else:\n"
    "            w, b = weight.split(self.d_model), bias.split(self.d_model)\n"
    "            q, k, v = (torch.nn.functional.linear(x, w[i], b[i]) for i, x in enumerate((q, k, v)))\n"
    "        q, k, v = (x.reshape(B, -1, self.n_heads, self.d_k).permute(0, 2, 1, 3) for x in (q, k, v))\n")]

VARIANTS = {"einsum_and_neg_inf_masking": {ATT: EINSUM_NEG_INF},
            "fused_projection": {MHA: FUSED_PROJECTION},
            "masks_written_differently": {MASKS: [
                ("(tokens != pad_idx)[:, None, None, :]", "tokens.ne(pad_idx).unsqueeze(1).unsqueeze(2)"),
                ("torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]",
                 "(torch.arange(T, device=device)[None, :] <= torch.arange(T, device=device)[:, None])"
                 ".view(1, 1, T, T)")]}}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_correct_solution_written_differently_gets_full_marks(tmp_path, variant):
    report = grade_json(mutant(tmp_path, VARIANTS[variant]), "assignment2")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
