"""A held-out set of classic Transformer bugs: what the diagnosis says of bugs it was not built from.

The course's table (tests/grading/bugs.py) is what `grade expected` grades and the diagnosis matches
against; this set is kept apart from it, so the share of these bugs the report names on their own
component measures how far the diagnosis (table and numerical forensics, grader.suite.forensics)
generalises. Each entry is one mistake students really make, taken from the seeds' lineage
(harvardnlp/annotated-transformer, hyunwoongko/transformer, hkproj/pytorch-transformer and their kin)
and the forums, with its source in a comment where one thread reports it; several are written
differently from a table entry that computes the same thing (a student's spelling of the same bug),
many are not in the table at all, and some cannot be told from the public checks.

tests/kit/heldout_record.json holds, per entry, what its component's failing public checks said
when graded (`python -m tests.kit.heldout` grades every entry again and rewrites it: minutes);
tests/kit/unit/test_heldout.py diagnoses from it (`diagnosed`, the fixture `record`) and
tests/kit/sandbox/test_heldout.py grades a few entries afresh.
"""

import pytest

from grader.judging import diagnosis
from grader.results import Details, Outcome
from tests.grading.bugs import ATT, DEC, EMB, ENC, FFN, LN, MASKS, MHA, PE, SUB, TRANSFORMER
from tests.kit.classic import Classic, _one

_LN_OUT = "return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta"
_PE_SIN, _PE_COS = "pe[:, 0::2] = torch.sin(position * div)", "pe[:, 1::2] = torch.cos(position * div[: d_model // 2])"
_PE_DIV = "torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))"
_SCORES = "scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)"
_FILL = "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"
_SOFTMAX = "weights = scores.softmax(dim=-1)"
_SPLIT = {n: f"self.w_{n}({n}).view(B, {t}, self.n_heads, self.d_k).transpose(1, 2)"
          for n, t in (("q", "T_q"), ("k", "T_k"), ("v", "T_k"))}
_MERGE = "out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)"
_POST, _PRE = "return self.norm(x + self.dropout(sublayer(x)))", "return x + self.dropout(sublayer(self.norm(x)))"
_ENC_SELF = "lambda x: self.self_attn(x, x, x, src_mask)"
_CROSS = "self.cross_attn(x, memory, memory, src_mask)"
_FINAL = "return self.norm(x) if self.norm_first else x"

HELDOUT: dict[str, Classic] = {
    # --- assignment1: LayerNorm
    # annotated-transformer's LayerNorm (std unbiased, eps outside the root): annotated-transformer #119,
    # codertimo/BERT-pytorch #30
    "ln_annotated_std_plus_eps": _one(
        "LayerNorm", LN, _LN_OUT,
        "return self.gamma * (x - mean) / (x.std(dim=-1, keepdim=True) + self.eps) + self.beta",
        "LayerNorm as the Annotated Transformer writes it: unbiased std, eps outside the root"),
    # torch.var's default is unbiased (allenai/allennlp #953, annotated-transformer #119)
    "ln_var_default_unbiased": _one(
        "LayerNorm", LN, "x.var(dim=-1, keepdim=True, unbiased=False)", "x.var(dim=-1, keepdim=True)",
        "LayerNorm with torch.var's default (unbiased) variance"),
    "ln_std_unbiased_inside_root": _one(
        "LayerNorm", LN, "torch.sqrt(var + self.eps)",
        "torch.sqrt(x.var(dim=-1, keepdim=True, correction=1) + self.eps)",
        "LayerNorm with the unbiased variance written with correction=1"),
    "ln_without_eps": _one("LayerNorm", LN, "torch.sqrt(var + self.eps)", "torch.sqrt(var)",
                           "LayerNorm without eps (NaN on a constant vector)"),
    "ln_gamma_beta_swapped": _one(
        "LayerNorm", LN, _LN_OUT, "return self.beta * (x - mean) / torch.sqrt(var + self.eps) + self.gamma",
        "LayerNorm with gamma and beta swapped"),
    "ln_without_affine": _one("LayerNorm", LN, _LN_OUT, "return (x - mean) / torch.sqrt(var + self.eps)",
                              "LayerNorm that never applies gamma and beta"),
    "ln_beta_inside_the_scale": _one(
        "LayerNorm", LN, _LN_OUT, "return self.gamma * ((x - mean) / torch.sqrt(var + self.eps) + self.beta)",
        "LayerNorm that adds beta before scaling by gamma"),
    "ln_statistics_over_the_batch": Classic("LayerNorm", {LN: [
        ("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=0, keepdim=True)"),
        ("var = x.var(dim=-1, keepdim=True, unbiased=False)", "var = x.var(dim=0, keepdim=True, unbiased=False)")]},
        "LayerNorm with BatchNorm's axis: statistics over dim 0"),
    "ln_variance_from_the_second_moment": _one(
        "LayerNorm", LN, "var = x.var(dim=-1, keepdim=True, unbiased=False)",
        "var = (x * x).mean(dim=-1, keepdim=True) - mean ** 2",
        "LayerNorm with var = E[x^2] - E[x]^2 (cancels for vectors far from 0)"),
    "ln_mean_not_kept": _one("LayerNorm", LN, "mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=-1)",
                             "LayerNorm whose mean loses its dimension (keepdim forgotten)"),
    "ln_divides_by_the_std_squared_root": _one(
        "LayerNorm", LN, "torch.sqrt(var + self.eps)", "torch.sqrt(torch.sqrt(var + self.eps))",
        "LayerNorm divided by the square root of the std"),
    "ln_eps_1e_6": _one("LayerNorm", LN, "eps: float = 1e-5", "eps: float = 1e-6",
                        "LayerNorm whose eps defaults to 1e-6 (another library's default)"),
    # --- assignment1: the feed-forward network
    "ffn_relu_after_linear2": Classic("PositionwiseFeedForward", {FFN: [
        ("h = F.relu(self.linear1(x))", "h = self.linear1(x)"),
        ("return self.linear2(self.dropout(h))", "return F.relu(self.linear2(self.dropout(h)))")]},
        "the feed-forward network with its ReLU on the output, not the hidden layer"),
    "ffn_relu_on_the_input": _one("PositionwiseFeedForward", FFN, "F.relu(self.linear1(x))", "self.linear1(F.relu(x))",
                                  "the feed-forward network with ReLU applied to its input"),
    "ffn_tanh_for_relu": _one("PositionwiseFeedForward", FFN, "F.relu(self.linear1(x))", "torch.tanh(self.linear1(x))",
                              "the feed-forward network with tanh for ReLU"),
    "ffn_residual_inside": _one("PositionwiseFeedForward", FFN, "return self.linear2(self.dropout(h))",
                                "return x + self.linear2(self.dropout(h))",
                                "a feed-forward network that adds its own residual"),
    "ffn_linear1_without_bias": _one("PositionwiseFeedForward", FFN, "self.linear1 = nn.Linear(d_model, d_ff)",
                                     "self.linear1 = nn.Linear(d_model, d_ff, bias=False)",
                                     "the first linear layer without bias"),
    "ffn_dropout_twice": _one("PositionwiseFeedForward", FFN, "return self.linear2(self.dropout(h))",
                              "return self.dropout(self.linear2(self.dropout(h)))",
                              "the feed-forward network with a second dropout on its output"),
    # --- assignment1: positional encoding
    "pe_sin_cos_really_swapped": Classic("PositionalEncoding", {PE: [
        (_PE_SIN, "pe[:, 0::2] = torch.cos(position * div)"),
        (_PE_COS, "pe[:, 1::2] = torch.sin(position * div[: d_model // 2])")]},
        "a positional table with cos on the even columns and sin on the odd ones"),
    # Kyubyong/transformer #81: an integer division makes every exponent 0
    "pe_integer_division_in_the_exponent": _one(
        "PositionalEncoding", PE, _PE_DIV, "1.0 / 10000.0 ** (torch.arange(0, d_model, 2) // d_model)",
        "a positional table whose exponent 2i // d_model is an integer division (always 0)"),
    # zju3dv/LoFTR #41: -log(10000) / d_model // 2, an operator precedence slip
    "pe_exponent_precedence": _one(
        "PositionalEncoding", PE, "(-math.log(10000.0) / d_model)", "(-math.log(10000.0) / d_model // 2)",
        "a positional table whose exponent is floored by // (operator precedence)"),
    "pe_positions_from_one": _one(
        "PositionalEncoding", PE, "torch.arange(max_len, dtype=torch.float32)",
        "torch.arange(1, max_len + 1, dtype=torch.float32)", "a positional table whose positions start at 1"),
    "pe_exp_without_log": _one(
        "PositionalEncoding", PE, "(-math.log(10000.0) / d_model)", "(-10000.0 / d_model)",
        "a positional table with exp(-10000 * 2i / d_model): the log forgotten"),
    # batch-first vs sequence-first: the table sliced by x.size(0) (the PyTorch tutorial is sequence-first)
    "pe_sliced_by_the_batch": _one("PositionalEncoding", PE, "T = x.size(1)", "T = x.size(0)",
                                   "a positional encoding sliced by the batch size, not the length"),
    "pe_multiplied_not_added": _one("PositionalEncoding", PE, "self.dropout(x + self.pe[:T])",
                                    "self.dropout(x * self.pe[:T])", "a positional encoding multiplied into x"),
    "pe_dropout_on_the_table": _one("PositionalEncoding", PE, "self.dropout(x + self.pe[:T])",
                                    "x + self.dropout(self.pe[:T])", "a positional encoding that drops out the table"),
    "pe_base_1000": _one("PositionalEncoding", PE, "(-math.log(10000.0) / d_model)", "(-math.log(1000.0) / d_model)",
                         "a positional table with 1000 where the formula has 10000"),
    # --- assignment1: embeddings
    # hkproj/pytorch-transformer's InputEmbeddings has no padding_idx
    "emb_without_padding_idx": _one("TokenEmbedding", EMB,
                                    "self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)",
                                    "self.embedding = nn.Embedding(vocab_size, d_model)",
                                    "a token embedding whose padding row is not zero"),
    "emb_scaled_by_d_model_root_written_as_power": _one(
        "TokenEmbedding", EMB, "* math.sqrt(self.d_model)", "* self.d_model ** 0.25",
        "a token embedding scaled by d_model ** 0.25"),
    "emb_scale_divides": _one("TokenEmbedding", EMB, "self.embedding(x) * math.sqrt(self.d_model)",
                              "self.embedding(x) / self.d_model ** 0.5",
                              "a token embedding divided by sqrt(d_model), written as a power"),
    "emb_scale_forgotten_written_differently": _one(
        "TokenEmbedding", EMB, "return self.embedding(x) * math.sqrt(self.d_model)", "return self.embedding(x)",
        "a token embedding that is not scaled"),
    "temb_scale_after_position": _one(
        "TransformerEmbedding", EMB, "return self.position(self.token(x))",
        "return self.position(self.token.embedding(x)) * math.sqrt(self.token.d_model)",
        "an embedding that scales by sqrt(d_model) after adding the positions"),
    "temb_padding_idx_not_passed": _one(
        "TransformerEmbedding", EMB, "self.token = TokenEmbedding(vocab_size, d_model, padding_idx)",
        "self.token = TokenEmbedding(vocab_size, d_model)",
        "an embedding that does not pass padding_idx on"),
    "temb_position_added_twice": _one(
        "TransformerEmbedding", EMB, "return self.position(self.token(x))",
        "return self.position(self.position(self.token(x)))", "an embedding that adds the positions twice"),
    # --- assignment2: scaled dot-product attention
    "sdpa_d_k_from_the_length": _one("scaled_dot_product_attention", ATT, "d_k = q.size(-1)", "d_k = q.size(-2)",
                                     "attention scaled by sqrt(T_q): d_k read from the wrong axis"),
    "sdpa_q_and_k_swapped": _one("scaled_dot_product_attention", ATT, _SCORES,
                                 "scores = k @ q.transpose(-2, -1) / math.sqrt(d_k)",
                                 "attention with k @ q^T: the scores transposed"),
    # hyunwoongko/transformer #10: fill with -inf, whose fully masked rows are 0/0
    "sdpa_fill_minus_inf": _one("scaled_dot_product_attention", ATT, "torch.finfo(scores.dtype).min)",
                                "float(\"-inf\"))", "attention filled with -inf (NaN on fully masked rows)"),
    # hyunwoongko/transformer before #10: masked_fill(mask == 0, -e) with e = 1e-12, near 0
    "sdpa_fill_minus_e": _one("scaled_dot_product_attention", ATT, "torch.finfo(scores.dtype).min)", "-1e-12)",
                              "attention filled with -1e-12 (blocked keys keep their weight)"),
    "sdpa_mask_added": _one("scaled_dot_product_attention", ATT, _FILL, "scores = scores + mask",
                            "attention that adds the boolean mask to the scores"),
    "sdpa_mask_multiplied": _one("scaled_dot_product_attention", ATT, _FILL, "scores = scores * mask",
                                 "attention that multiplies the scores by the mask"),
    "sdpa_mask_eq_one_blocks": _one("scaled_dot_product_attention", ATT, "masked_fill(~mask,", "masked_fill(mask == 1,",
                                    "attention that fills where mask == 1 (the allowed keys)"),
    "sdpa_softmax_dim_1": _one("scaled_dot_product_attention", ATT, _SOFTMAX, "weights = scores.softmax(dim=1)",
                               "attention with softmax(dim=1)"),
    "sdpa_scale_after_softmax": Classic("scaled_dot_product_attention", {ATT: [
        (_SCORES, "scores = q @ k.transpose(-2, -1)"),
        (_SOFTMAX, "weights = scores.softmax(dim=-1) / math.sqrt(d_k)")]},
        "attention that divides the weights, not the scores, by sqrt(d_k)"),
    "sdpa_scaled_q_and_k": _one("scaled_dot_product_attention", ATT, _SCORES,
                                "scores = (q / math.sqrt(d_k)) @ (k / math.sqrt(d_k)).transpose(-2, -1)",
                                "attention with q and k each divided by sqrt(d_k) (1/d_k in all)"),
    "sdpa_weights_times_k": _one("scaled_dot_product_attention", ATT, "return weights @ v, weights",
                                 "return weights @ k, weights", "attention that mixes the keys, not the values"),
    "sdpa_log_softmax": _one("scaled_dot_product_attention", ATT, _SOFTMAX, "weights = scores.log_softmax(dim=-1)",
                             "attention with log_softmax for softmax"),
    "sdpa_without_scale_written_differently": _one(
        "scaled_dot_product_attention", ATT, _SCORES, "scores = torch.matmul(q, k.transpose(-1, -2))",
        "attention without the scale, with torch.matmul"),
    "sdpa_returns_weights_before_dropout": _one(
        "scaled_dot_product_attention", ATT,
        "    if dropout is not None:\n        weights = dropout(weights)\n    return weights @ v, weights",
        "    out = (dropout(weights) if dropout is not None else weights) @ v\n    return out, weights",
        "attention that returns the weights before dropout"),
    "sdpa_mask_after_softmax_minus_inf": Classic("scaled_dot_product_attention", {ATT: [
        (_FILL, "pass"),
        ("return weights @ v, weights", "weights = weights.masked_fill(~mask, 0.0) if mask is not None else weights\n"
                                         "    return weights @ v, weights")]},
        "attention that zeroes blocked weights after the softmax and dropout"),
    # --- assignment2: masks
    # the Annotated Transformer's (B, 1, T) pad mask
    "pad_mask_three_dims": _one("make_pad_mask", MASKS, "(tokens != pad_idx)[:, None, None, :]",
                                "(tokens != pad_idx).unsqueeze(-2)", "a pad mask shaped (B, 1, T)"),
    "pad_mask_as_int": _one("make_pad_mask", MASKS, "return (tokens != pad_idx)[:, None, None, :]",
                            "return (tokens != pad_idx).int()[:, None, None, :]", "a pad mask of 0/1 integers"),
    "pad_mask_compares_to_zero": _one("make_pad_mask", MASKS, "(tokens != pad_idx)", "(tokens != 0)",
                                      "a pad mask that takes 0 for the padding, whatever pad_idx is"),
    "pad_mask_eq_written_with_unsqueeze": _one(
        "make_pad_mask", MASKS, "(tokens != pad_idx)[:, None, None, :]",
        "(tokens == pad_idx).unsqueeze(1).unsqueeze(2)",
        "a pad mask True on the padding (PyTorch's key_padding_mask convention)"),
    # PyTorch's generate_square_subsequent_mask: triu(diagonal=1) is the *blocked* set
    "causal_mask_triu_diagonal_1": _one("make_causal_mask", MASKS, ".tril()[None, None]",
                                        ".triu(diagonal=1)[None, None]",
                                        "a causal mask True on the future, written triu(diagonal=1)"),
    "causal_mask_sees_the_next_token": _one("make_causal_mask", MASKS, ".tril()[None, None]", ".tril(1)[None, None]",
                                            "a causal mask that lets position i see i + 1"),
    "causal_mask_float": _one("make_causal_mask", MASKS, "torch.ones(T, T, dtype=torch.bool, device=device).tril()",
                              "torch.ones(T, T, device=device).tril()", "a causal mask of floats"),
    "causal_mask_2d": _one("make_causal_mask", MASKS, ".tril()[None, None]", ".tril()",
                           "a causal mask shaped (T, T)"),
    "causal_mask_on_the_cpu": _one("make_causal_mask", MASKS, "dtype=torch.bool, device=device)",
                                   "dtype=torch.bool)", "a causal mask made on the CPU whatever the device"),
    "tgt_mask_causal_only": _one("make_tgt_mask", MASKS, "return pad & causal", "return causal",
                                 "a target mask without the padding"),
    # annotated-transformer #137: the pad mask unsqueezed on the query axis
    "tgt_mask_pad_over_queries": _one("make_tgt_mask", MASKS, "return pad & causal",
                                      "return pad.transpose(-2, -1) & causal",
                                      "a target mask whose padding hides queries, not keys"),
    "tgt_mask_pad_only": _one("make_tgt_mask", MASKS, "return pad & causal",
                              "return pad.expand(-1, -1, tgt.size(1), -1)", "a target mask without causality"),
    "tgt_mask_causal_blocked_convention": _one(
        "make_tgt_mask", MASKS, "return pad & causal", "return pad & ~causal",
        "a target mask that ands the padding with the future"),
    # --- assignment2: multi-head attention
    "mha_split_reshape_without_transpose": Classic("MultiHeadAttention", {MHA: [
        (_SPLIT[n], f"self.w_{n}({n}).reshape(B, self.n_heads, {t}, self.d_k)")
        for n, t in (("q", "T_q"), ("k", "T_k"), ("v", "T_k"))]},
        "heads split with reshape(B, h, T, d_k), no transpose"),
    "mha_merge_view_without_contiguous": _one("MultiHeadAttention", MHA, _MERGE,
                                              "out.transpose(1, 2).view(B, T_q, self.d_model)",
                                              "heads merged with view after a transpose (no .contiguous())"),
    "mha_mask_not_passed": _one("MultiHeadAttention", MHA, "scaled_dot_product_attention(q, k, v, mask)",
                                "scaled_dot_product_attention(q, k, v)", "multi-head attention that drops the mask"),
    "mha_keys_projected_with_w_q": _one("MultiHeadAttention", MHA, "k = self.w_k(k)", "k = self.w_q(k)",
                                        "multi-head attention that projects the keys with w_q (copy-paste)"),
    "mha_values_projected_with_w_k": _one("MultiHeadAttention", MHA, "v = self.w_v(v)", "v = self.w_k(v)",
                                          "multi-head attention that projects the values with w_k (copy-paste)"),
    "mha_heads_interleaved": Classic("MultiHeadAttention", {MHA: [
        (_SPLIT[n], f"self.w_{n}({n}).view(B, {t}, self.d_k, self.n_heads).permute(0, 3, 1, 2)")
        for n, t in (("q", "T_q"), ("k", "T_k"), ("v", "T_k"))]},
        "heads split as view(B, T, d_k, h): head i takes every h-th column"),
    "mha_merge_interleaved": _one("MultiHeadAttention", MHA, _MERGE,
                                  "out.permute(0, 2, 3, 1).reshape(B, T_q, self.d_model)",
                                  "heads merged as (B, T, d_k, h): the columns interleaved"),
    "mha_weights_kept_after_dropout": _one(
        "MultiHeadAttention", MHA, "self.attention_weights = weights\n        out = self.dropout(weights) @ v",
        "weights = self.dropout(weights)\n        self.attention_weights = weights\n        out = weights @ v",
        "multi-head attention that keeps the weights after dropout"),
    "mha_output_projection_w_v": _one("MultiHeadAttention", MHA, "return self.w_o(out)", "return self.w_v(out)",
                                      "multi-head attention whose output projection is w_v"),
    # --- assignment3: residual connections
    "res_post_norm_without_residual": _one("ResidualConnection", SUB, _POST,
                                           "return self.norm(self.dropout(sublayer(x)))",
                                           "a post-norm residual connection without the residual"),
    "res_pre_norm_without_residual": _one("ResidualConnection", SUB, _PRE,
                                          "return self.dropout(sublayer(self.norm(x)))",
                                          "a pre-norm residual connection without the residual"),
    "res_post_norm_normalises_twice": _one("ResidualConnection", SUB, _POST,
                                           "return self.norm(x + self.dropout(sublayer(self.norm(x))))",
                                           "a post-norm residual connection that also normalises the sublayer's input"),
    # harvardnlp/harvardnlp.github.io #6: the Annotated Transformer's pre-norm where the paper is post-norm
    "res_always_pre_norm": _one("ResidualConnection", SUB, "        if self.norm_first:\n", "        if True:\n",
                                "a residual connection always pre-norm (the Annotated Transformer's)"),
    "res_always_post_norm": _one("ResidualConnection", SUB, "        if self.norm_first:\n", "        if False:\n",
                                 "a residual connection always post-norm (norm_first ignored)"),
    "res_pre_norm_normalises_the_sum": _one("ResidualConnection", SUB, _PRE,
                                            "return self.norm(x + self.dropout(sublayer(self.norm(x))))",
                                            "a pre-norm residual connection that normalises the sum too"),
    # --- assignment3: encoder
    "enc_layer_ffn_without_residual": _one("EncoderLayer", ENC, "return self.residuals[1](x, self.feed_forward)",
                                           "return self.feed_forward(x)",
                                           "an encoder layer without the FFN's residual"),
    "enc_layer_one_residual_module_twice": _one("EncoderLayer", ENC, "return self.residuals[1](x, self.feed_forward)",
                                                "return self.residuals[0](x, self.feed_forward)",
                                                "an encoder layer that uses residuals[0] for both sublayers"),
    "enc_layer_attends_to_the_unnormalised_input": _one(
        "EncoderLayer", ENC, _ENC_SELF, "lambda y: self.self_attn(x, x, x, src_mask)",
        "an encoder layer whose attention closure reads the outer x (the norm skipped in pre-norm)"),
    "enc_layer_ffn_before_attention": _one(
        "EncoderLayer", ENC,
        f"x = self.residuals[0](x, {_ENC_SELF})  # (B, S, d_model)\n"
        "        return self.residuals[1](x, self.feed_forward)",
        f"x = self.residuals[1](x, self.feed_forward)\n        return self.residuals[0](x, {_ENC_SELF})",
        "an encoder layer with the feed-forward before the attention"),
    # the Annotated Transformer's Encoder always ends in a norm
    "encoder_final_norm_always": _one("Encoder", ENC, _FINAL, "return self.norm(x)",
                                      "an encoder that applies its final LayerNorm in post-norm too"),
    "encoder_one_layer_repeated": _one(
        "Encoder", ENC, "[EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first)] * n_layers",
        "an encoder whose layers are one module repeated ([layer] * n)"),
    "encoder_stops_after_one_layer": _one("Encoder", ENC, "            x = layer(x, src_mask)  # (B, S, d_model)\n",
                                          "            x = layer(x, src_mask)  # (B, S, d_model)\n            break\n",
                                          "an encoder that runs its first layer only"),
    "encoder_drops_the_mask": _one("Encoder", ENC, "x = layer(x, src_mask)  # (B, S", "x = layer(x, None)  # (B, S",
                                   "an encoder that does not pass the mask to its layers"),
    # --- assignment3: decoder
    # Kamichanw/SeekDeeper #3 and zhouhaoyi/Informer2020 #38: the cross-attention's mask
    "dec_cross_attention_with_the_target_mask": _one("DecoderLayer", DEC, _CROSS,
                                                     "self.cross_attn(x, memory, memory, tgt_mask)",
                                                     "cross-attention masked with the target mask"),
    "dec_cross_attention_queries_from_memory": _one("DecoderLayer", DEC, _CROSS,
                                                    "self.cross_attn(memory, x, x, src_mask)",
                                                    "cross-attention with the memory as queries"),
    "dec_cross_attention_values_from_x": _one("DecoderLayer", DEC, _CROSS, "self.cross_attn(x, memory, x, src_mask)",
                                              "cross-attention whose values are the decoder's input"),
    "dec_self_attention_with_the_source_mask": _one("DecoderLayer", DEC, "self.self_attn(x, x, x, tgt_mask)",
                                                    "self.self_attn(x, x, x, src_mask)",
                                                    "decoder self-attention masked with the source mask"),
    "dec_cross_attention_with_self_attn": _one("DecoderLayer", DEC, _CROSS,
                                               "self.self_attn(x, memory, memory, src_mask)",
                                               "cross-attention done with the self-attention's weights (copy-paste)"),
    "dec_cross_attention_without_mask": _one("DecoderLayer", DEC, _CROSS, "self.cross_attn(x, memory, memory, None)",
                                             "cross-attention that ignores the source mask"),
    "dec_layer_without_cross_attention": _one(
        "DecoderLayer", DEC, f"        x = self.residuals[1](x, lambda x: {_CROSS})  # (B, T, d_model)\n", "",
        "a decoder layer without its cross-attention"),
    "decoder_one_layer_repeated": _one(
        "Decoder", DEC, "[DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first)] * n_layers",
        "a decoder whose layers are one module repeated"),
    "decoder_masks_swapped": _one("Decoder", DEC, "x = layer(x, memory, src_mask, tgt_mask)  # (B",
                                  "x = layer(x, memory, tgt_mask, src_mask)  # (B",
                                  "a decoder that passes the masks in the wrong order"),
    "decoder_missing_final_norm": _one("Decoder", DEC, _FINAL, "return x", "a pre-norm decoder without its final norm"),
    # --- assignment3: the Transformer
    "transformer_decodes_with_the_source_embedding": _one(
        "Transformer", TRANSFORMER, "self.decoder(self.tgt_embed(tgt),", "self.decoder(self.src_embed(tgt),",
        "a Transformer that embeds the target with the source embedding"),
    # annotated-transformer's Generator: log_softmax inside the model
    "transformer_log_softmax_output": _one(
        "Transformer", TRANSFORMER, "return self.projection(self.decode(memory, src_mask, tgt, tgt_mask))",
        "return self.projection(self.decode(memory, src_mask, tgt, tgt_mask)).log_softmax(dim=-1)",
        "a Transformer that returns log-probabilities, not logits"),
    "transformer_encoder_without_mask": _one("Transformer", TRANSFORMER,
                                             "return self.encoder(self.src_embed(src), src_mask)",
                                             "return self.encoder(self.src_embed(src), None)",
                                             "a Transformer whose encoder gets no source mask"),
    "transformer_masks_swapped_in_decode": _one(
        "Transformer", TRANSFORMER, "self.decode(memory, src_mask, tgt, tgt_mask)",
        "self.decode(memory, tgt_mask, tgt, src_mask)", "a Transformer that passes decode its masks swapped"),
    "transformer_tgt_vocab_from_src": _one(
        "Transformer", TRANSFORMER, "self.tgt_embed = TransformerEmbedding(tgt_vocab_size,",
        "self.tgt_embed = TransformerEmbedding(src_vocab_size,", "a target embedding sized by the source vocabulary"),
    "transformer_no_xavier": _one("Transformer", TRANSFORMER, "nn.init.xavier_uniform_(p)", "pass",
                                  "a Transformer without Xavier initialisation"),
}
# issue 44's round: assignment 4, device placement, multi-head attention's projections, the model's wiring
from tests.kit.heldout_reach import REACH  # noqa: E402

HELDOUT.update(REACH)

RECORD = __import__("pathlib").Path(__file__).with_name("heldout_record.json")


def graded(name: str, tmp) -> dict:
    """What grading solutions/ with the held-out bug `name` gives, as the diagnosis reads it: the
    assignment's failing public checks ({id: status, reason, message, details}), the failing checks
    the reference's parts excuse, and the report's diagnoses ({component: bug id})."""
    from tests.kit.conftest import as_json, grade_report, mutant

    bug = HELDOUT[name]
    report = grade_report(mutant(tmp, bug.patches), bug.assignment)
    failing = {t.id: {"status": t.outcome.status, "reason": t.outcome.reason, "message": t.outcome.message,
                      "details": t.outcome.details.shown()}
               for c in report.components for t in c.checks if t.tier == "public" and t.outcome.status != "passed"}
    excused = sorted(t.id for c in report.components for t in c.checks if t.excused_by or t.waiting_on)
    named = {c["name"]: c["diagnosis"]["bug"] for c in as_json(report)["components"] if c["diagnosis"]}
    return {"failing": as_json_safe(failing), "excused": excused, "named": named}


def as_json_safe(value):
    import json

    return json.loads(json.dumps(value, default=str))


@pytest.fixture(scope="module", name="record")
def record_fixture() -> dict:
    """RECORD as read: the fixture `record` of the held-out tests (imported into their modules)."""
    import json

    return json.loads(RECORD.read_text())


def diagnosed(course, name: str, graded: dict) -> dict[str, str]:
    """component -> bug id, as the report would name them from `graded`'s failing public checks. Each
    held-out tree has its one bug in the assignment graded, so the parts of earlier assignments are the
    reference's and pass: none is upstream."""
    spec = course.assignment(HELDOUT[name].assignment)
    results = {chk.id: Outcome("passed") for comp in spec.components for chk in comp.checks if chk.tier == "public"}
    results.update({i: Outcome(o["status"], o["reason"], o["message"], Details.from_json(o["details"]))
                    for i, o in graded["failing"].items()})
    named = diagnosis.diagnose(course, spec, results, frozenset(graded["excused"]), upstream=frozenset())
    return {component: said.bug for component, said in named.items()}


def main() -> None:
    """Grade every held-out bug (minutes) and rewrite RECORD; print what the report names."""
    import json
    import sys
    import tempfile
    from pathlib import Path

    only = sys.argv[1:]
    record = json.loads(RECORD.read_text()) if RECORD.exists() and only else {}
    for name in only or HELDOUT:
        with tempfile.TemporaryDirectory() as tmp:
            record[name] = graded(name, Path(tmp))
        said = record[name]["named"]
        verdict = ("table" if said.get(HELDOUT[name].component, "").split(":")[0] != "looks_like" else "forensics") \
            if HELDOUT[name].component in said else "-"
        wrong = sorted(set(said) - {HELDOUT[name].component})
        print(f"{name:50s} {verdict:9s} {said}{'  WRONG ' + str(wrong) if wrong else ''}", flush=True)
    RECORD.write_text(json.dumps({k: record[k] for k in HELDOUT if k in record}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
