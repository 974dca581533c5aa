"""Correct components written with PyTorch's own functions, wrapped to the contract, keep every point.

A check that fails one of them rewards a particular way of computing (or of rounding) instead of the
result: fix the check, not the variant. Some of them call what course.toml forbids students
(F.layer_norm, F.multi_head_attention_forward): they are graded under a copy of it without its
`forbidden` lists, which turns that check off (tests/kit/sandbox/test_forbidden.py has it on)."""

import re
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, full_marks, grade_json, mutant, scores

LN, FF = "assignment1/layer_norm.py", "assignment1/feed_forward.py"
ATT, MHA = "assignment2/attention.py", "assignment2/multi_head_attention.py"

LAYER_NORM_F = [(
    "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
    "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n"
    "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta  # (..., d_model)\n",
    "        return torch.nn.functional.layer_norm(x, (x.size(-1),), self.gamma, self.beta, self.eps)\n")]

LAYER_NORM_TWO_PASS = [(
    "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n",
    "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1)\n")]

FEED_FORWARD_F_LINEAR = [(
    "        h = F.relu(self.linear1(x))  # (..., d_ff)\n"
    "        return self.linear2(self.dropout(h))  # (..., d_model)\n",
    "        h = F.relu(F.linear(x, self.linear1.weight, self.linear1.bias))\n"
    "        return F.linear(self.dropout(h), self.linear2.weight, self.linear2.bias)\n")]

SDPA_BADDBMM_NEG_INF = [(
    "    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)\n"
    "    if mask is not None:\n"
    "        # finfo.min, not -inf: an all-blocked row becomes uniform instead of NaN\n"
    "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
    "    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])\n"
    "    q3 = q.expand(*lead, *q.shape[-2:]).reshape(-1, q.size(-2), d_k)\n"
    "    k3 = k.expand(*lead, *k.shape[-2:]).reshape(-1, k.size(-2), d_k)\n"
    "    empty = torch.zeros(q3.size(0), q3.size(1), k3.size(1), dtype=q.dtype, device=q.device)\n"
    "    scores = torch.baddbmm(empty, q3, k3.transpose(1, 2), beta=0.0, alpha=d_k ** -0.5)\n"
    "    scores = scores.reshape(*lead, q.size(-2), k.size(-2))\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(~mask, float('-inf'))\n"
    "    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # an all-blocked row: 0/0 -> 0\n")]

SDPA_MATMUL_NEG_INF = [(
    "    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)\n"
    "    if mask is not None:\n"
    "        # finfo.min, not -inf: an all-blocked row becomes uniform instead of NaN\n"
    "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
    "    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(~mask, float('-inf'))\n"
    "    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)\n")]

# F.multi_head_attention_forward with the contract's four projections. PyTorch's masks say True =
# blocked; a float mask of finfo.min (not -inf) keeps a row whose keys are all blocked finite, as the
# contract asks.
MHA_F_FORWARD = [(
    "        B, T_q, _ = q.shape\n"
    "        T_k = k.size(1)\n"
    "        # head i takes columns i*d_k:(i+1)*d_k, as in nn.MultiheadAttention\n"
    "        q = self.w_q(q).view(B, T_q, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_q, d_k)\n"
    "        k = self.w_k(k).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)\n"
    "        v = self.w_v(v).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, T_k, d_k)\n"
    "        # attend without dropout so the kept weights are the clean softmax,\n"
    "        # then mix v with the dropped-out weights\n"
    "        _, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T_q, T_k)\n"
    "        self.attention_weights = weights\n"
    "        out = self.dropout(weights) @ v  # (B, h, T_q, d_k)\n"
    "        out = out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)  # (B, T_q, d_model)\n"
    "        return self.w_o(out)\n",
    "        B, T_q, _ = q.shape\n"
    "        T_k = k.size(1)\n"
    "        attn_mask = None\n"
    "        if mask is not None:\n"
    "            blocked = ~mask.expand(B, self.n_heads, T_q, T_k).reshape(B * self.n_heads, T_q, T_k)\n"
    "            attn_mask = torch.zeros(blocked.shape, dtype=q.dtype, device=q.device)\n"
    "            attn_mask = attn_mask.masked_fill(blocked, torch.finfo(q.dtype).min)\n"
    "        out, weights = torch.nn.functional.multi_head_attention_forward(\n"
    "            q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), self.d_model, self.n_heads,\n"
    "            None, torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias]), None, None, False,\n"
    "            self.dropout.p, self.w_o.weight, self.w_o.bias, training=self.training, need_weights=True,\n"
    "            attn_mask=attn_mask, use_separate_proj_weight=True, q_proj_weight=self.w_q.weight,\n"
    "            k_proj_weight=self.w_k.weight, v_proj_weight=self.w_v.weight, average_attn_weights=False)\n"
    "        self.attention_weights = weights  # (B, h, T_q, T_k)\n"
    "        return out.transpose(0, 1)  # (B, T_q, d_model)\n")]

# name: (assignment graded, {file: patches})
VARIANTS = {
    "layer_norm_via_F_layer_norm": ("assignment1", {LN: LAYER_NORM_F}),
    "layer_norm_two_pass": ("assignment1", {LN: LAYER_NORM_TWO_PASS}),
    "feed_forward_via_F_linear": ("assignment1", {FF: FEED_FORWARD_F_LINEAR}),
    "sdpa_via_baddbmm_and_neg_inf": ("assignment2", {ATT: SDPA_BADDBMM_NEG_INF}),
    "sdpa_via_matmul_and_neg_inf": ("assignment2", {ATT: SDPA_MATMUL_NEG_INF}),
    "mha_via_F_multi_head_attention_forward": ("assignment2", {MHA: MHA_F_FORWARD}),
    "all_of_them_under_assignment3": ("assignment3", {LN: LAYER_NORM_F, FF: FEED_FORWARD_F_LINEAR,
                                                      ATT: SDPA_BADDBMM_NEG_INF, MHA: MHA_F_FORWARD}),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_torch_backed_version_gets_full_marks(tmp_path, course_without_forbidden, name):
    assignment, patches = VARIANTS[name]
    report = grade_json(mutant(tmp_path, patches), assignment, course=course_without_forbidden)
    lost = {c["name"]: [t["id"] for t in c["tests"] if t["status"] != "passed"] for c in report["components"]
            if c["score"] != c["max_score"]}
    assert scores(report) == full_marks(report), lost


@pytest.fixture(scope="module")
def course_without_forbidden(tmp_path_factory) -> Path:
    """The kit's course.toml without `forbidden` lists, its folders named absolutely."""
    text = re.sub(r"^forbidden = \[[^\]]*\]\n", "", (ROOT / "course.toml").read_text(), flags=re.M)
    for key, folder in (("reference", "solutions"), ("assignments", "assignments"), ("suites", "tests/grading")):
        text = text.replace(f'{key} = "{folder}"', f'{key} = "{ROOT / folder}"', 1)
    assert "forbidden = [" not in text
    path = tmp_path_factory.mktemp("course") / "course.toml"
    path.write_text(text)
    return path
