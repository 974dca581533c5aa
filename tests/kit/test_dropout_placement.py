"""Dropout in the wrong place costs points in that component, and only there.

The suites grade placement in train() mode with dropout=1.0, where nn.Dropout outputs exact zeros
whatever the random numbers, so each misplacement gives a different, fixed output."""

import pytest

from tests.kit.conftest import assert_loses_only_in, grade_json, mutant

LN, FF = "assignment1/layer_norm.py", "assignment1/feed_forward.py"
PE, EMB = "assignment1/positional_encoding.py", "assignment1/embedding.py"
ATT, MHA = "assignment2/attention.py", "assignment2/multi_head_attention.py"
RES, ENC, DEC, TR = ("assignment3/sublayer.py", "assignment3/encoder.py", "assignment3/decoder.py",
                     "assignment3/transformer.py")

# name: (assignment, file, [(old, new), ...], the component that must lose points)
MISPLACED = {
    "feed_forward_dropout_after_linear2": ("assignment1", FF, [(
        "return self.linear2(self.dropout(h))", "return self.dropout(self.linear2(h))")], "PositionwiseFeedForward"),
    "feed_forward_dropout_on_the_input": ("assignment1", FF, [(
        "h = F.relu(self.linear1(x))", "h = F.relu(self.linear1(self.dropout(x)))"), (
        "return self.linear2(self.dropout(h))", "return self.linear2(h)")], "PositionwiseFeedForward"),
    "positional_encoding_without_dropout": ("assignment1", PE, [(
        "return self.dropout(x + self.pe[:T])", "return x + self.pe[:T]")], "PositionalEncoding"),
    "positional_encoding_dropout_on_x_only": ("assignment1", PE, [(
        "return self.dropout(x + self.pe[:T])", "return self.dropout(x) + self.pe[:T]")], "PositionalEncoding"),
    "transformer_embedding_drops_the_dropout_argument": ("assignment1", EMB, [(
        "self.position = PositionalEncoding(d_model, max_len, dropout)",
        "self.position = PositionalEncoding(d_model, max_len)")], "TransformerEmbedding"),
    "sdpa_dropout_on_the_output": ("assignment2", ATT, [(
        "    if dropout is not None:\n        weights = dropout(weights)\n"
        "    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)\n",
        "    out = weights @ v\n"
        "    return (dropout(out) if dropout is not None else out), weights\n")], "scaled_dot_product_attention"),
    "sdpa_dropout_on_the_scores": ("assignment2", ATT, [(
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n    if dropout is not None:\n"
        "        weights = dropout(weights)\n",
        "    if dropout is not None:\n        scores = dropout(scores)\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n")], "scaled_dot_product_attention"),
    "mha_dropout_on_the_output": ("assignment2", MHA, [
        ("out = self.dropout(weights) @ v", "out = weights @ v"),
        ("return self.w_o(out)", "return self.dropout(self.w_o(out))")], "MultiHeadAttention"),
    "residual_dropout_on_the_sum": ("assignment3", RES, [
        ("return x + self.dropout(sublayer(self.norm(x)))", "return self.dropout(x + sublayer(self.norm(x)))"),
        ("return self.norm(x + self.dropout(sublayer(x)))", "return self.norm(self.dropout(x + sublayer(x)))")],
        "ResidualConnection"),
    "residual_dropout_on_the_sublayer_input": ("assignment3", RES, [
        ("return x + self.dropout(sublayer(self.norm(x)))", "return x + sublayer(self.dropout(self.norm(x)))"),
        ("return self.norm(x + self.dropout(sublayer(x)))", "return self.norm(x + sublayer(self.dropout(x)))")],
        "ResidualConnection"),
    "encoder_layer_residuals_without_dropout": ("assignment3", ENC, [(
        "[ResidualConnection(d_model, dropout, norm_first) for _ in range(2)]",
        "[ResidualConnection(d_model, norm_first=norm_first) for _ in range(2)]")], "EncoderLayer"),
    "decoder_layer_residuals_without_dropout": ("assignment3", DEC, [(
        "[ResidualConnection(d_model, dropout, norm_first) for _ in range(3)]",
        "[ResidualConnection(d_model, norm_first=norm_first) for _ in range(3)]")], "DecoderLayer"),
    "encoder_layers_without_dropout": ("assignment3", ENC, [(
        "[EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[EncoderLayer(d_model, n_heads, d_ff, norm_first=norm_first) for _ in range(n_layers)]")], "Encoder"),
    "decoder_layers_without_dropout": ("assignment3", DEC, [(
        "[DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[DecoderLayer(d_model, n_heads, d_ff, norm_first=norm_first) for _ in range(n_layers)]")], "Decoder"),
    "transformer_embeddings_without_dropout": ("assignment3", TR, [
        ("self.src_embed = TransformerEmbedding(src_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
         "self.src_embed = TransformerEmbedding(src_vocab_size, d_model, max_len, 0.0, padding_idx=pad_idx)"),
        ("self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
         "self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, 0.0, padding_idx=pad_idx)")],
        "Transformer"),
}


@pytest.mark.parametrize("name", sorted(MISPLACED))
def test_misplaced_dropout_costs_points_in_its_component_only(tmp_path, name):
    assignment, file, edits, component = MISPLACED[name]
    report = grade_json(mutant(tmp_path, {file: edits}), assignment)
    assert_loses_only_in(report, component)
    broken = next(c for c in report["components"] if c["name"] == component)
    failed = {t["id"] for t in broken["tests"] if t["status"] != "passed"}
    assert any("dropout" in check for check in failed), failed  # lost on a dropout check, not by accident
