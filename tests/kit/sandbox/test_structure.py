"""Isolated checks on code that relies on the contract's structure, and gradients through stand-ins.

An isolated check runs a composite on stand-ins for the reference's parts: they must look like
the contract says (torch.nn built-ins, plain attributes, the kit's own submodules callable) and
let gradients through, so that a correct composite keeps every point whatever it leans on."""

import pytest
import torch

from grader import load_course
from grader.grading.pipeline import start_sandbox
from grader.suite.remote import Submission
from tests.grading.helpers.names import random_state, transformer_shapes
from tests.kit.conftest import ROOT, SOLUTIONS, full_marks, grade_json, mutant, scores

ENC, DEC, TRANSFORMER = "assignment3/encoder.py", "assignment3/decoder.py", "assignment3/transformer.py"
EL, DL = "assignment3.encoder:EncoderLayer", "assignment3.decoder:DecoderLayer"
TR = "assignment3.transformer:Transformer"
LAYER_PARTS = ("assignment2.multi_head_attention:MultiHeadAttention",
               "assignment1.feed_forward:PositionwiseFeedForward", "assignment3.sublayer:ResidualConnection")
TR_PARTS = ("assignment1.embedding:TransformerEmbedding", "assignment3.encoder:Encoder", "assignment3.decoder:Decoder",
            "assignment2.masks:make_pad_mask", "assignment2.masks:make_tgt_mask")


def _residual(i: int, sublayer: str) -> str:
    """Residual i of a layer written out by hand from the ResidualConnection's own norm and dropout."""
    r = f"self.residuals[{i}]"
    return (f"(x + {r}.dropout(({sublayer})({r}.norm(x))) if {r}.norm_first "
            f"else {r}.norm(x + {r}.dropout(({sublayer})(x))))")


LAYERS_BY_HAND = {
    ENC: [("x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))  # (B, S, d_model)",
           "x = " + _residual(0, "lambda x: self.self_attn(x, x, x, src_mask)")),
          ("return self.residuals[1](x, self.feed_forward)  # (B, S, d_model)",
           "return " + _residual(1, "self.feed_forward"))],
    DEC: [("x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))  # (B, T, d_model)",
           "x = " + _residual(0, "lambda x: self.self_attn(x, x, x, tgt_mask)")),
          ("x = self.residuals[1](x, lambda x: self.cross_attn(x, memory, memory, src_mask))  # (B, T, d_model)",
           "x = " + _residual(1, "lambda x: self.cross_attn(x, memory, memory, src_mask)")),
          ("return self.residuals[2](x, self.feed_forward)  # (B, T, d_model)",
           "return " + _residual(2, "self.feed_forward"))],
}

INIT_BY_WALKING_MODULES = {TRANSFORMER: [(
    "        for p in self.parameters():\n"
    "            if p.dim() > 1:\n"
    "                nn.init.xavier_uniform_(p)\n"
    "        # Xavier also filled the padding rows; padding must embed to zero\n"
    "        with torch.no_grad():\n"
    "            self.src_embed.token.embedding.weight[pad_idx].zero_()\n"
    "            self.tgt_embed.token.embedding.weight[pad_idx].zero_()\n",
    "        for m in self.modules():\n"
    "            if isinstance(m, (nn.Linear, nn.Embedding)):\n"
    "                nn.init.xavier_uniform_(m.weight)\n"
    "            if isinstance(m, nn.Embedding) and m.padding_idx is not None:\n"
    "                with torch.no_grad():\n"
    "                    m.weight[m.padding_idx].zero_()\n"
    "        for p in self.parameters():\n"
    "            if p.dim() > 1 and not p.abs().sum():\n"
    "                nn.init.xavier_uniform_(p)\n")]}

READS_ATTRIBUTES_OF_ITS_PARTS = {
    ENC: [("x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))",
           "assert self.self_attn.n_heads * self.self_attn.d_k == x.size(-1) and self.self_attn.w_q.in_features\n"
           "        assert self.residuals[0].norm_first == self.residuals[1].norm_first\n"
           "        assert self.residuals[0].norm.eps > 0 and self.residuals[0].dropout.p >= 0\n"
           "        x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))"),
          ("return self.residuals[1](x, self.feed_forward)",
           "assert self.self_attn.attention_weights.shape[1] == self.self_attn.n_heads\n"
           "        assert self.feed_forward.linear1.out_features == self.feed_forward.linear2.in_features\n"
           "        return self.residuals[1](x, self.feed_forward)")],
    TRANSFORMER: [("src_mask = make_pad_mask(src, self.pad_idx)",
                   "assert self.src_embed.token.embedding.padding_idx == self.pad_idx\n"
                   "        assert self.src_embed.position.pe.shape[1] == self.src_embed.token.d_model\n"
                   "        assert len(self.encoder.layers) == len(self.decoder.layers)\n"
                   "        assert self.encoder.norm_first == self.decoder.layers[0].residuals[0].norm_first\n"
                   "        src_mask = make_pad_mask(src, self.pad_idx)")],
}


# the Annotated Transformer's `clones`: one layer built, then deep-copied (a stand-in, in isolated checks)
CLONES_LAYERS = {path: [(f"[{layer}(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
                         f"[__import__('copy').deepcopy({layer}(d_model, n_heads, d_ff, dropout, norm_first))\n"
                         "             for _ in range(n_layers)]")]
                 for path, layer in ((ENC, "EncoderLayer"), (DEC, "DecoderLayer"))}


@pytest.mark.parametrize("patches", [LAYERS_BY_HAND, INIT_BY_WALKING_MODULES, READS_ATTRIBUTES_OF_ITS_PARTS,
                                     CLONES_LAYERS],
                         ids=["layers_call_norm_and_dropout", "init_walks_modules", "reads_attributes_of_parts",
                              "clones_layers_with_deepcopy"])
def test_code_relying_on_the_contracts_structure_keeps_full_marks(tmp_path, patches):
    report = grade_json(mutant(tmp_path, patches), "assignment3")
    tests = [t for c in report["components"] for t in c["tests"]]
    assert scores(report) == full_marks(report), [t for t in tests if t["status"] != "passed"]
    isolated = [t for t in tests if t["id"].endswith("with_reference_parts")]
    assert len(isolated) >= 5 and all(t["status"] == "passed" for t in isolated), isolated


def test_isolated_checks_still_catch_a_wiring_bug(tmp_path):
    report = grade_json(mutant(tmp_path, {ENC: [("self.self_attn(x, x, x, src_mask)", "self.self_attn(x, x, x)")]}),
                        "assignment3")
    layer = next(c for c in report["components"] if c["name"] == "EncoderLayer")
    failed = {t["id"] for t in layer["tests"] if t["status"] != "passed"}
    assert "encoder_layer_matches_reference_with_reference_parts" in failed, layer


@pytest.fixture(scope="module")
def student():
    course = load_course(ROOT / "course.toml")
    sandbox = start_sandbox(course=course, assignment=course.assignment("assignment3"), submission=SOLUTIONS)
    try:
        yield Submission(sandbox, "cpu", course.reference)
    finally:
        sandbox.close()


def _case(name: str, nf: bool, g: torch.Generator):
    """(target, constructor args, inputs, indices of the inputs to differentiate, parts to swap in)."""
    if name == "Transformer":
        src, tgt = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]]), torch.tensor([[1, 6, 2], [3, 0, 0]])
        return (TR, (8, 9), {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 16, "pad_idx": 0,
                             "norm_first": nf}, [src, tgt], (), TR_PARTS)
    x, memory = torch.randn(2, 4, 8, generator=g), torch.randn(2, 3, 8, generator=g)
    keep = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    if name == "EncoderLayer":
        return EL, (8, 2, 16), {"norm_first": nf}, [x, keep[:, None, None, :]], (0,), LAYER_PARTS
    causal = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]
    return DL, (8, 2, 16), {"norm_first": nf}, [x, memory, keep[:, None, None, :3], causal], (0, 1), LAYER_PARTS


def _gradients(student, target, args, kwargs, state, inputs, wrt, grad_output):
    m = student.new(target, *args, dropout=0.0, **kwargs).load(state).eval()
    out, input_grads, grads = m.backward(*inputs, grad_output=grad_output, wrt=wrt)
    return out, {**{f"input{i}": gi for i, gi in zip(wrt, input_grads, strict=True)}, **grads}


@pytest.mark.parametrize("nf", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("name", ["EncoderLayer", "DecoderLayer", "Transformer"])
def test_gradients_flow_through_reference_parts_and_the_sublayer_callbacks(student, name, nf):
    """Every parameter gets the gradient it gets without stand-ins, self_attn's through the
    ResidualConnection's callback, the decoder's memory through cross_attn's closure."""
    g = torch.Generator().manual_seed(3)
    target, args, kwargs, inputs, wrt, parts = _case(name, nf, g)
    state = {k: torch.randn(v.shape, generator=g) * 0.5 if v.is_floating_point() else v
             for k, v in student.new(target, *args, **kwargs).state().items()}
    grad_output = torch.randn((2, 3, 9) if name == "Transformer" else (2, 4, 8), generator=g)
    out, want = _gradients(student, target, args, kwargs, state, inputs, wrt, grad_output)
    student.swap(*parts)
    try:
        swapped_out, got = _gradients(student, target, args, kwargs, state, inputs, wrt, grad_output)
    finally:
        student.reset()
    torch.testing.assert_close(swapped_out, out, atol=1e-5, rtol=0)
    assert set(got) == set(want), sorted(set(got) ^ set(want))
    for key, grad in sorted(got.items()):
        if key.endswith("w_k.bias") or not nf and key.endswith(("encoder.norm.gamma", "encoder.norm.beta",
                                                                 "decoder.norm.gamma", "decoder.norm.beta")):
            continue  # a key bias shifts every score of a row alike; post-norm stacks skip their final norm
        assert grad is not None and bool(torch.isfinite(grad).all()) and bool((grad != 0).any()), key
        torch.testing.assert_close(grad, want[key], atol=1e-5, rtol=0, msg=key)


def test_train_mode_dropout_keeps_its_mask_for_backward_and_graphs_are_freed(student):
    pe = "assignment1.positional_encoding:PositionalEncoding"
    student.swap(pe)
    try:
        m = student.new(pe, 8, max_len=16, dropout=0.5).train()
        x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
        out, (gx,), _ = m.backward(x, grad_output=torch.ones(2, 5, 8))
        kept = (out != 0).float()  # (2, 5, 8): the mask forward drew
        assert 0 < kept.sum() < kept.numel()
        torch.testing.assert_close(gx, kept * 2.0)  # d dropout(x + pe) / dx = mask / (1 - p)
        m.eval()(x)  # the next request tells the grader the backward's graph is gone on the other side
        assert not student.parts.graphs
    finally:
        student.reset()


def test_a_module_first_imported_while_its_parts_are_swapped_runs_its_own_parts_after_reset():
    """The composite's module may first be imported while the reference's parts stand in for its own (a
    check run on the reference's parts right after a restart, or in a grader that ran the composite's
    own checks elsewhere): once the check ends, the submission's own parts run again."""
    course = load_course(ROOT / "course.toml")
    sandbox = start_sandbox(course=course, assignment=course.assignment("assignment3"), submission=SOLUTIONS)
    try:
        student = Submission(sandbox, "cpu", course.reference)
        src, tgt = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]]), torch.tensor([[1, 6, 2], [3, 0, 0]])
        kwargs = {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 16, "pad_idx": 0, "dropout": 0.0}
        state = random_state(transformer_shapes(8, 9, 8, 16, 2), 5)
        student.swap(*TR_PARTS)  # before anything imported assignment3.transformer
        swapped = student.new(TR, 8, 9, **kwargs).load(state).eval()(src, tgt)
        student.reset()
        # raised "the grader could not run the reference part": the stand-ins stayed in the module
        own = student.new(TR, 8, 9, **kwargs).load(state).eval()(src, tgt)
        torch.testing.assert_close(own, swapped)  # the submission is the reference: the same logits
    finally:
        sandbox.close()
