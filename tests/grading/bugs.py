"""The course's table of classic bugs: one per entry, named, with the component it lives in, the
patch that puts it into the reference, what the code then computes and the fix.

Course material for instructors, next to the suites: it does not ship to students (a bug is the
reference with one change). `grade expected` grades each bug's tree and stores what its public
checks report (outputs, never code) in public/expected/bugs.json, from which the grader names a
student's bug (grader.judging.diagnosis); the kit's tests are stated over the same table (each entry alone
costs its own component only and is diagnosed as itself there: tests/kit/sandbox/test_assignmentN.py,
test_dropout_placement.py; fairness: tests/kit/sandbox/test_attribution.py).
"""

from dataclasses import dataclass

LN, FFN, PE, EMB = ("assignment1/layer_norm.py", "assignment1/feed_forward.py", "assignment1/positional_encoding.py",
                    "assignment1/embedding.py")
ATT, MASKS, MHA = "assignment2/attention.py", "assignment2/masks.py", "assignment2/multi_head_attention.py"
SUB, ENC, DEC = "assignment3/sublayer.py", "assignment3/encoder.py", "assignment3/decoder.py"
TRANSFORMER = "assignment3/transformer.py"
DATA, TRAINING, DECODING = "assignment4/data.py", "assignment4/training.py", "assignment4/decoding.py"


@dataclass(frozen=True)
class Bug:
    component: str  # where the bug lives: the only component that may lose points for it
    patches: dict[str, list[tuple[str, str]]]
    message: str = ""  # what the code then computes: "attention without the 1/sqrt(d_k) scale"
    fix: str = ""  # the fix, in a few words: "divide the scores by math.sqrt(d_k)"
    undiagnosed: str = ""  # why the grader cannot name this bug from its public checks ("": it can)

    @property
    def assignment(self) -> str:
        return next(iter(self.patches)).partition("/")[0]


def _one(component: str, file: str, old: str, new: str, message: str = "", fix: str = "") -> Bug:
    return Bug(component, {file: [(old, new)]}, message, fix)


# The first entry of each component is the one the fairness properties pair with others
# (tests/kit/sandbox/test_attribution.py): add new entries after it.
BUGS: dict[str, Bug] = {
    # assignment1
    "layer_norm_unbiased_variance": _one(
        "LayerNorm", LN, "unbiased=False", "unbiased=True",
        "LayerNorm with the unbiased variance (divided by d_model - 1)",
        "divide by d_model: x.var(dim=-1, unbiased=False)"),
    "layer_norm_eps_outside_sqrt": _one(
        "LayerNorm", LN, "torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)",
        "LayerNorm with eps added outside the square root", "normalise by torch.sqrt(var + eps)"),
    "layer_norm_default_eps_1e_12": _one(
        "LayerNorm", LN, "eps: float = 1e-5", "eps: float = 1e-12",
        "LayerNorm whose eps defaults to 1e-12", "make eps default to 1e-5, as the contract says"),
    "feed_forward_no_relu": _one(
        "PositionwiseFeedForward", FFN, "F.relu(self.linear1(x))", "self.linear1(x)",
        "the feed-forward network without its ReLU", "apply F.relu between the two linear layers"),
    "positional_encoding_sin_cos_swapped": _one(
        "PositionalEncoding", PE, "torch.sin(", "torch.cos(",
        "the positional table with cos in place of sin", "use sin on the even columns and cos on the odd ones"),
    "positional_encoding_sin_cos_not_interleaved": Bug("PositionalEncoding", {PE: [
        ("pe[:, 0::2] = torch.sin(", "pe[:, : (d_model + 1) // 2] = torch.sin("),
        ("pe[:, 1::2] = torch.cos(", "pe[:, (d_model + 1) // 2 :] = torch.cos(")]},
        "a positional table with all the sines first and all the cosines after (not interleaved)",
        "sines in the even columns pe[:, 0::2], cosines in the odd ones pe[:, 1::2]"),
    "positional_encoding_exponent_i_not_2i": _one(
        "PositionalEncoding", PE, "torch.arange(0, d_model, 2, dtype=torch.float32)",
        "torch.arange((d_model + 1) // 2, dtype=torch.float32)",
        "a positional table with 10000^(i / d_model) where the formula has 10000^(2i / d_model)",
        "the exponent of column pair i is 2i / d_model: torch.arange(0, d_model, 2) / d_model"),
    "token_embedding_no_scale": _one(
        "TokenEmbedding", EMB, "* math.sqrt(self.d_model)", "",
        "the token embedding not scaled by sqrt(d_model)", "multiply the embedding by math.sqrt(d_model)"),
    "token_embedding_scaled_by_d_model": _one(
        "TokenEmbedding", EMB, "* math.sqrt(self.d_model)", "* self.d_model",
        "the token embedding scaled by d_model instead of sqrt(d_model)",
        "multiply the embedding by math.sqrt(d_model)"),
    "transformer_embedding_no_position": _one(
        "TransformerEmbedding", EMB, "return self.position(self.token(x))", "return self.token(x)",
        "the embedding without the positional encoding",
        "add the positional encoding to the scaled token embedding"),
    # assignment2
    "softmax_over_the_wrong_dim": _one(
        "scaled_dot_product_attention", ATT, "scores.softmax(dim=-1)", "scores.softmax(dim=-2)",
        "attention with the softmax over the queries (dim=-2)", "take the softmax over the keys, dim=-1"),
    "no_sqrt_d_k": _one(
        "scaled_dot_product_attention", ATT, " / math.sqrt(d_k)", "",
        "attention without the 1/sqrt(d_k) scale", "divide the scores by math.sqrt(d_k)"),
    "mask_applied_after_softmax": _one(
        "scaled_dot_product_attention", ATT,
        "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
        "        pass\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n"
        "    if mask is not None:\n"
        "        weights = weights.masked_fill(~mask, 0.0)\n",
        "attention that masks the weights after the softmax", "fill the blocked scores before the softmax"),
    "mask_polarity_inverted": _one(
        "scaled_dot_product_attention", ATT, "masked_fill(~mask,", "masked_fill(mask,",
        "attention that blocks where the mask is True", "fill where the mask is False: masked_fill(~mask, ...)"),
    "mask_filled_with_zero": _one(
        "scaled_dot_product_attention", ATT, "masked_fill(~mask, torch.finfo(scores.dtype).min)",
        "masked_fill(~mask, 0.0)",
        "attention that sets the blocked scores to 0 (exp(0) = 1: they still get weight)",
        "fill the blocked scores with a large negative number: torch.finfo(scores.dtype).min"),
    "pad_mask_polarity_inverted": _one(
        "make_pad_mask", MASKS, "(tokens != pad_idx)", "(tokens == pad_idx)",
        "a pad mask that is True on the padding", "keep the tokens: tokens != pad_idx"),
    "causal_mask_off_by_one": _one(
        "make_causal_mask", MASKS, ".tril()[None, None]", ".tril(-1)[None, None]",
        "a causal mask without its diagonal (each position blind to itself)", "use .tril() with no offset"),
    "causal_mask_transposed": _one(
        "make_causal_mask", MASKS, ".tril()[None, None]", ".triu()[None, None]",
        "a causal mask transposed (upper triangle: each position sees the future, not the past)",
        "keep the lower triangle, .tril(): position i attends to j <= i"),
    "tgt_mask_or_instead_of_and": _one(
        "make_tgt_mask", MASKS, "return pad & causal", "return pad | causal",
        "a target mask that combines padding and causality with or", "combine them with and: pad & causal"),
    "heads_split_with_the_wrong_view": Bug("MultiHeadAttention", {MHA: [
        (f"self.w_{n}({n}).view(B, {t}, self.n_heads, self.d_k).transpose(1, 2)",
         f"self.w_{n}({n}).view(B, self.n_heads, {t}, self.d_k)") for n, t in (("q", "T_q"), ("k", "T_k"),
                                                                               ("v", "T_k"))]},
        "heads split with view(B, h, T, d_k) without the transpose", "view(B, T, h, d_k) then transpose(1, 2)"),
    "heads_merged_without_transpose": _one(
        "MultiHeadAttention", MHA, "out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)",
        "out.reshape(B, T_q, self.d_model)",
        "heads merged without transposing back", "out.transpose(1, 2).contiguous().view(B, T, d_model)"),
    "mha_without_output_projection": _one(
        "MultiHeadAttention", MHA, "return self.w_o(out)", "return out",
        "multi-head attention without its output projection", "return self.w_o(out) after merging the heads"),
    # assignment3
    "post_norm_wired_as_pre_norm": _one(
        "ResidualConnection", SUB, "        if self.norm_first:\n", "        if not self.norm_first:\n",
        "a residual connection wired pre-norm where post-norm is asked, and the reverse",
        "norm_first: x + sublayer(norm(x)); else norm(x + sublayer(x))"),
    "residual_adds_the_normalised_input": _one(
        "ResidualConnection", SUB, "return x + self.dropout(sublayer(self.norm(x)))",
        "return self.norm(x) + self.dropout(sublayer(self.norm(x)))",
        "a pre-norm residual connection that adds norm(x), not x, around the sublayer",
        "the skip path carries x untouched: x + dropout(sublayer(norm(x)))"),
    "encoder_layer_skips_the_mask": _one(
        "EncoderLayer", ENC, "self.self_attn(x, x, x, src_mask)", "self.self_attn(x, x, x)",
        "an encoder layer whose self-attention ignores the source mask", "pass src_mask to the self-attention"),
    "encoder_layer_one_residual_around_both_sublayers": _one(
        "EncoderLayer", ENC,
        "x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))  # (B, S, d_model)\n"
        "        return self.residuals[1](x, self.feed_forward)",
        "return self.residuals[0](x, lambda x: self.feed_forward(self.self_attn(x, x, x, src_mask)))",
        "an encoder layer with one residual connection around attention and feed-forward together",
        "one residual connection per sublayer: residuals[0] around the attention, residuals[1] around the FFN"),
    "encoder_missing_final_norm": _one(
        "Encoder", ENC, "return self.norm(x) if self.norm_first else x", "return x",
        "a pre-norm encoder without its final LayerNorm", "return self.norm(x) when norm_first"),
    "cross_attention_fed_the_decoder_input_as_keys": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)", "self.cross_attn(x, x, x, None)",
        "cross-attention over the decoder's own input instead of the memory",
        "cross_attn(x, memory, memory, src_mask)"),
    "decoder_layer_self_attention_without_the_target_mask": _one(
        "DecoderLayer", DEC, "self.self_attn(x, x, x, tgt_mask)", "self.self_attn(x, x, x, None)",
        "a decoder layer whose self-attention ignores the target mask (it sees the future)",
        "pass tgt_mask to the self-attention"),
    "decoder_final_norm_always": _one(
        "Decoder", DEC, "return self.norm(x) if self.norm_first else x", "return self.norm(x)",
        "a decoder that applies its final LayerNorm in post-norm too", "apply the final norm only when norm_first"),
    "forward_without_padding_mask": _one(
        "Transformer", TRANSFORMER, "src_mask = make_pad_mask(src, self.pad_idx)  # (B, 1, 1, S)", "src_mask = None",
        "a Transformer that does not mask the source padding",
        "src_mask = make_pad_mask(src, pad_idx), passed to encoder and decoder"),
    "padding_rows_not_zeroed": _one(
        "Transformer", TRANSFORMER, "self.src_embed.token.embedding.weight[pad_idx].zero_()", "pass",
        "embeddings whose padding rows are not zeroed at initialisation",
        "zero the pad_idx rows of the embedding weights"),
    "transformer_target_mask_without_causality": _one(
        "Transformer", TRANSFORMER, "tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
        "tgt_mask = make_pad_mask(tgt, self.pad_idx)  # (B, 1, 1, T)",
        "a Transformer whose target mask hides the padding but not the future",
        "tgt_mask = make_tgt_mask(tgt, pad_idx): padding and causality"),
    # assignment4
    "vocab_specials_after_the_words": Bug(
        "Vocab", {DATA: [("self.itos = list(self.specials) + words", "self.itos = words + list(self.specials)")]},
        "a vocabulary that puts the special tokens after the words (<pad> is not 0)",
        "start itos with <pad>, <sos>, <eos>, <unk>, then the words"),
    "vocab_min_freq_strict": _one(
        "Vocab", DATA, "c >= min_freq", "c > min_freq",
        "a vocabulary that keeps the tokens seen more than min_freq times (not at least)",
        "keep count >= min_freq"),
    "collate_pads_with_zero": _one(
        "collate", DATA, "list(r) + [pad_idx] * (width - len(r))", "list(r) + [0] * (width - len(r))",
        "collate padding with 0 whatever pad_idx is", "pad with pad_idx"),
    "label_smoothing_counts_the_padding": _one(
        "LabelSmoothingLoss", TRAINING, "return (per_token * keep).sum() / keep.sum().clamp(min=1)",
        "return per_token.mean()",
        "label smoothing averaged over every position, padded ones included",
        "average over the non-pad targets: (per_token * keep).sum() / keep.sum()"),
    "label_smoothing_keeps_the_pad_column_out": _one(
        "LabelSmoothingLoss", TRAINING,
        "q = torch.full_like(log_probs, self.smoothing / self.vocab_size)  # (N, V)\n"
        "        safe = targets.masked_fill(~keep, 0)  # pad targets may be any id; point them somewhere valid\n"
        "        q.scatter_add_(1, safe.unsqueeze(1), torch.full_like(log_probs[:, :1], 1.0 - self.smoothing))",
        "q = torch.full_like(log_probs, self.smoothing / (self.vocab_size - 2))  # (N, V)\n"
        "        safe = targets.masked_fill(~keep, 0)\n"
        "        q.scatter_(1, safe.unsqueeze(1), 1.0 - self.smoothing)\n"
        "        q[:, self.pad_idx] = 0.0",
        "the Annotated Transformer's label smoothing (smoothing / (V - 2), none on the pad column)",
        "q = (1 - smoothing) one-hot + smoothing / V on every class, pad included, as F.cross_entropy does"),
    "noam_lr_warmup_off_by_one": _one(
        "noam_lr", TRAINING, "return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)",
        "return d_model ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5)",
        "the Noam schedule one step ahead (step + 1 where the formula has step)",
        "steps count from 1: use step as given (LambdaLR's s + 1 belongs in the lambda)"),
    "train_epoch_steps_the_scheduler_once_per_epoch": _one(
        "train_epoch", TRAINING,
        "        if scheduler is not None:\n            scheduler.step()\n        losses.append(loss.item())",
        "        losses.append(loss.item())\n    if scheduler is not None:\n        scheduler.step()",
        "an epoch that steps the scheduler once per epoch", "call scheduler.step() after every optimizer.step()"),
    "greedy_decode_keeps_predicting_after_eos": _one(
        "greedy_decode", DECODING, "nxt = nxt.masked_fill(done, model.pad_idx)", "pass",
        "greedy decoding that keeps the model's predictions after a row's <eos>",
        "fill the finished rows with pad: nxt.masked_fill(done, model.pad_idx)"),
}

# Dropout in the wrong place: invisible in eval() mode, where dropout is the identity, but the
# suites' placement checks run train() mode with nn.Dropout(1), which zeroes exactly what it is
# applied to whatever the random numbers, so each misplacement gives its own fixed output.
_DROPOUT: dict[str, Bug] = {
    "feed_forward_dropout_after_linear2": _one(
        "PositionwiseFeedForward", FFN, "return self.linear2(self.dropout(h))", "return self.dropout(self.linear2(h))",
        "the feed-forward network with its dropout after the second linear layer",
        "drop out the hidden activations: linear2(dropout(relu(linear1(x))))"),
    "feed_forward_dropout_on_the_input": Bug("PositionwiseFeedForward", {FFN: [
        ("h = F.relu(self.linear1(x))", "h = F.relu(self.linear1(self.dropout(x)))"),
        ("return self.linear2(self.dropout(h))", "return self.linear2(h)")]},
        "the feed-forward network with its dropout on its input",
        "drop out the hidden activations: linear2(dropout(relu(linear1(x))))"),
    "positional_encoding_without_dropout": _one(
        "PositionalEncoding", PE, "return self.dropout(x + self.pe[:T])", "return x + self.pe[:T]",
        "a positional encoding that never applies its dropout", "return self.dropout(x + pe[:T])"),
    "positional_encoding_dropout_on_x_only": _one(
        "PositionalEncoding", PE, "return self.dropout(x + self.pe[:T])", "return self.dropout(x) + self.pe[:T]",
        "a positional encoding that drops out x before adding the table", "drop out the sum: dropout(x + pe[:T])"),
    "transformer_embedding_drops_the_dropout_argument": _one(
        "TransformerEmbedding", EMB, "self.position = PositionalEncoding(d_model, max_len, dropout)",
        "self.position = PositionalEncoding(d_model, max_len)",
        "an embedding that does not pass its dropout on to the positional encoding",
        "PositionalEncoding(d_model, max_len, dropout)"),
    "sdpa_dropout_on_the_output": _one(
        "scaled_dot_product_attention", ATT,
        "    if dropout is not None:\n        weights = dropout(weights)\n"
        "    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)\n",
        "    out = weights @ v\n    return (dropout(out) if dropout is not None else out), weights\n",
        "attention with dropout on its output instead of its weights",
        "drop out the weights after the softmax, then weights @ v"),
    "sdpa_dropout_on_the_scores": _one(
        "scaled_dot_product_attention", ATT,
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n    if dropout is not None:\n"
        "        weights = dropout(weights)\n",
        "    if dropout is not None:\n        scores = dropout(scores)\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
        "attention with dropout on the scores, before the softmax", "drop out the weights after the softmax"),
    "mha_dropout_on_the_output": Bug("MultiHeadAttention", {MHA: [
        ("out = self.dropout(weights) @ v", "out = weights @ v"),
        ("return self.w_o(out)", "return self.dropout(self.w_o(out))")]},
        "multi-head attention with its dropout after the output projection",
        "drop out the attention weights: self.dropout(weights) @ v"),
    "residual_dropout_on_the_sum": Bug("ResidualConnection", {SUB: [
        ("return x + self.dropout(sublayer(self.norm(x)))", "return self.dropout(x + sublayer(self.norm(x)))"),
        ("return self.norm(x + self.dropout(sublayer(x)))", "return self.norm(self.dropout(x + sublayer(x)))")]},
        "a residual connection that drops out the sum, not the sublayer's output",
        "drop out the sublayer's output only: x + dropout(sublayer(...))"),
    "residual_dropout_on_the_sublayer_input": Bug("ResidualConnection", {SUB: [
        ("return x + self.dropout(sublayer(self.norm(x)))", "return x + sublayer(self.dropout(self.norm(x)))"),
        ("return self.norm(x + self.dropout(sublayer(x)))", "return self.norm(x + sublayer(self.dropout(x)))")]},
        "a residual connection that drops out the sublayer's input, not its output",
        "drop out the sublayer's output: x + dropout(sublayer(...))"),
    "encoder_layer_residuals_without_dropout": _one(
        "EncoderLayer", ENC, "[ResidualConnection(d_model, dropout, norm_first) for _ in range(2)]",
        "[ResidualConnection(d_model, norm_first=norm_first) for _ in range(2)]",
        "an encoder layer whose residual connections get no dropout",
        "ResidualConnection(d_model, dropout, norm_first)"),
    "decoder_layer_residuals_without_dropout": _one(
        "DecoderLayer", DEC, "[ResidualConnection(d_model, dropout, norm_first) for _ in range(3)]",
        "[ResidualConnection(d_model, norm_first=norm_first) for _ in range(3)]",
        "a decoder layer whose residual connections get no dropout",
        "ResidualConnection(d_model, dropout, norm_first)"),
    "encoder_layers_without_dropout": _one(
        "Encoder", ENC, "[EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[EncoderLayer(d_model, n_heads, d_ff, norm_first=norm_first) for _ in range(n_layers)]",
        "an encoder whose layers get no dropout", "EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first)"),
    "decoder_layers_without_dropout": _one(
        "Decoder", DEC, "[DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]",
        "[DecoderLayer(d_model, n_heads, d_ff, norm_first=norm_first) for _ in range(n_layers)]",
        "a decoder whose layers get no dropout", "DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first)"),
    "transformer_embeddings_without_dropout": Bug("Transformer", {TRANSFORMER: [
        (f"self.{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
         f"self.{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, 0.0, padding_idx=pad_idx)")
        for s in ("src", "tgt")]},
        "a Transformer whose embeddings get no dropout", "TransformerEmbedding(..., dropout, padding_idx=pad_idx)"),
}
DROPOUT = tuple(_DROPOUT)  # their kit test also asks that a dropout check is what fails
BUGS.update(_DROPOUT)

# Classic mistakes reported in the seeds' lineage (issue 37): the trackers of harvardnlp/annotated-transformer,
# hyunwoongko/transformer, hkproj/pytorch-transformer and their kin, and the PyTorch forums. Each names its
# source in a comment; grader.suite.forensics says what most of them look like even without this table.
_REPORTED: dict[str, Bug] = {
    # annotated-transformer #131: position / div_term where the formula has position * div_term
    "positional_encoding_position_divided_by_the_frequencies": Bug("PositionalEncoding", {PE: [
        ("pe[:, 0::2] = torch.sin(position * div)", "pe[:, 0::2] = torch.sin(position / div)"),
        ("pe[:, 1::2] = torch.cos(position * div[: d_model // 2])",
         "pe[:, 1::2] = torch.cos(position / div[: d_model // 2])")]},
        "a positional table with position / div_term where the formula has position * div_term",
        "multiply: sin(position * div_term), with div_term = exp(-log(10000) * 2i / d_model)"),
    # the div_term's exponent with its sign lost (exp(+log(10000) 2i/d): frequencies that grow)
    "positional_encoding_frequencies_grow": _one(
        "PositionalEncoding", PE, "(-math.log(10000.0) / d_model)", "(math.log(10000.0) / d_model)",
        "a positional table whose frequencies grow with the column (exp(+log(10000) 2i/d_model))",
        "div_term = exp(2i * -log(10000) / d_model): frequencies that fall"),
    # forums: LayerNorm that normalises by the variance, not the standard deviation
    "layer_norm_divides_by_the_variance": _one(
        "LayerNorm", LN, "/ torch.sqrt(var + self.eps)", "/ (var + self.eps)",
        "LayerNorm divided by the variance instead of its square root", "divide by torch.sqrt(var + eps)"),
    # forums: the statistics taken over the whole tensor, not each position's features
    "layer_norm_statistics_over_the_whole_tensor": Bug("LayerNorm", {LN: [
        ("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean()"),
        ("var = x.var(dim=-1, keepdim=True, unbiased=False)", "var = x.var(unbiased=False)")]},
        "LayerNorm with the mean and variance of the whole tensor, not of each position",
        "x.mean(dim=-1, keepdim=True), x.var(dim=-1, keepdim=True, unbiased=False)"),
    "feed_forward_gelu_for_relu": _one(
        "PositionwiseFeedForward", FFN, "F.relu(self.linear1(x))", "F.gelu(self.linear1(x))",
        "the feed-forward network with GELU where the paper has ReLU", "use F.relu, as the contract says"),
    "token_embedding_divided_by_sqrt_d_model": _one(
        "TokenEmbedding", EMB, "* math.sqrt(self.d_model)", "/ math.sqrt(self.d_model)",
        "the token embedding divided by sqrt(d_model) instead of multiplied",
        "multiply the embedding by math.sqrt(d_model)"),
    # DI-engine #333 and forums: masked_fill is not in place; its result thrown away, the mask does nothing
    "mask_fill_result_discarded": _one(
        "scaled_dot_product_attention", ATT, "scores = scores.masked_fill(~mask,", "scores.masked_fill(~mask,",
        "attention whose masked_fill result is thrown away (masked_fill is not in place: no mask)",
        "scores = scores.masked_fill(~mask, ...), or masked_fill_ in place"),
    "attention_scaled_by_d_k": _one(
        "scaled_dot_product_attention", ATT, " / math.sqrt(d_k)", " / d_k",
        "attention scaled by 1/d_k where the paper has 1/sqrt(d_k)", "divide the scores by math.sqrt(d_k)"),
    "attention_multiplied_by_sqrt_d_k": _one(
        "scaled_dot_product_attention", ATT, " / math.sqrt(d_k)", " * math.sqrt(d_k)",
        "attention that multiplies the scores by sqrt(d_k) instead of dividing",
        "divide the scores by math.sqrt(d_k)"),
    # the annotated transformer's -1e9: fine in float32, refused in float16 (its largest value is 65504)
    "attention_masks_with_minus_1e9": _one(
        "scaled_dot_product_attention", ATT, "masked_fill(~mask, torch.finfo(scores.dtype).min)",
        "masked_fill(~mask, -1e9)",
        "attention that fills blocked scores with -1e9, which float16 cannot hold",
        "fill with torch.finfo(scores.dtype).min, which fits every dtype"),
    # hyunwoongko/transformer #40: the pad mask over the queries, (B, 1, T, 1), not the keys
    "pad_mask_over_the_queries": _one(
        "make_pad_mask", MASKS, "(tokens != pad_idx)[:, None, None, :]", "(tokens != pad_idx)[:, None, :, None]",
        "a pad mask shaped (B, 1, T, 1): it masks queries, not keys",
        "(tokens != pad_idx)[:, None, None, :], shape (B, 1, 1, T)"),
    # PyTorch's generate_square_subsequent_mask convention (True/-inf = blocked) carried over
    "causal_mask_true_means_blocked": _one(
        "make_causal_mask", MASKS, ".tril()[None, None]", ".triu(1)[None, None]",
        "a causal mask that is True on the future (PyTorch's blocked-is-True convention)",
        "True means 'may attend': .tril(), j <= i"),
}
BUGS.update(_REPORTED)

# What the checks that no entry above fails are for (issue 39: `grade adequacy` flagged them): a bug
# each, the classic form of the mistake the check names in its hint
_GUARDED: dict[str, Bug] = {
    # assignment1
    "layer_norm_gamma_and_beta_not_parameters": Bug("LayerNorm", {LN: [
        ("self.gamma = nn.Parameter(torch.ones(d_model))", "self.gamma = torch.ones(d_model)"),
        ("self.beta = nn.Parameter(torch.zeros(d_model))", "self.beta = torch.zeros(d_model)")]},
        "LayerNorm whose gamma and beta are plain tensors, not nn.Parameter (never trained, not in state_dict)",
        "self.gamma = nn.Parameter(torch.ones(d_model)), self.beta = nn.Parameter(torch.zeros(d_model))"),
    "layer_norm_gamma_and_beta_swapped": _one(
        "LayerNorm", LN, "self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta",
        "self.beta * (x - mean) / torch.sqrt(var + self.eps) + self.gamma",
        "LayerNorm with gamma and beta swapped (beta scales, gamma shifts)",
        "gamma * (x - mean) / sqrt(var + eps) + beta"),
    "feed_forward_hidden_detached": _one(
        "PositionwiseFeedForward", FFN, "h = F.relu(self.linear1(x))", "h = F.relu(self.linear1(x)).detach()",
        "the feed-forward network with its hidden activations detached (linear1 never learns)",
        "no .detach() in forward: h = F.relu(self.linear1(x))"),
    "positional_encoding_pe_a_plain_attribute": _one(
        "PositionalEncoding", PE, 'self.register_buffer("pe", pe)', "self.pe = pe",
        "a positional table kept as a plain attribute, not a buffer (.to(device) leaves it behind)",
        "self.register_buffer('pe', pe)"),
    "positional_encoding_no_length_check": _one(
        "PositionalEncoding", PE,
        "        if T > self.max_len:\n"
        '            raise ValueError(f"sequence length T ({T}) exceeds max_len ({self.max_len})")\n', "",
        "a positional encoding that does not check T against max_len (a longer input fails in the addition)",
        "raise ValueError naming T and max_len when T > max_len"),
    "token_embedding_without_padding_idx": _one(
        "TokenEmbedding", EMB, "self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)",
        "self.embedding = nn.Embedding(vocab_size, d_model)",
        "a token embedding that leaves padding_idx out of nn.Embedding (the padding token embeds to a vector)",
        "nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)"),
    "transformer_embedding_drops_the_padding_idx": _one(
        "TransformerEmbedding", EMB, "self.token = TokenEmbedding(vocab_size, d_model, padding_idx)",
        "self.token = TokenEmbedding(vocab_size, d_model)",
        "an embedding that does not pass its padding_idx on to the token embedding",
        "TokenEmbedding(vocab_size, d_model, padding_idx)"),
    # assignment2
    "mha_ignores_the_mask": _one(
        "MultiHeadAttention", MHA, "scaled_dot_product_attention(q, k, v, mask)",
        "scaled_dot_product_attention(q, k, v)",
        "multi-head attention that does not pass its mask on to the attention",
        "scaled_dot_product_attention(q, k, v, mask)"),
    "mha_no_divisibility_check": _one(
        "MultiHeadAttention", MHA,
        "        if d_model % n_heads != 0:\n"
        '            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")\n', "",
        "multi-head attention that accepts a d_model not divisible by n_heads",
        "raise ValueError naming d_model and n_heads when d_model % n_heads != 0"),
    # assignment3
    "residual_pre_norm_without_the_norm": _one(
        "ResidualConnection", SUB, "return x + self.dropout(sublayer(self.norm(x)))",
        "return x + self.dropout(sublayer(x))",
        "a pre-norm residual connection that never applies its LayerNorm",
        "norm_first: x + dropout(sublayer(norm(x)))"),
    "encoder_passes_no_mask_to_its_layers": _one(
        "Encoder", ENC, "x = layer(x, src_mask)  # (B, S, d_model)", "x = layer(x, None)  # (B, S, d_model)",
        "an encoder that does not pass the source mask on to its layers", "layer(x, src_mask) for each layer"),
    "decoder_layer_cross_attention_with_the_self_attention_module": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)",
        "self.self_attn(x, memory, memory, src_mask)",
        "a decoder layer that attends to the memory with self_attn (cross_attn unused)",
        "self.cross_attn(x, memory, memory, src_mask)"),
    "decoder_passes_no_target_mask_to_its_layers": _one(
        "Decoder", DEC, "x = layer(x, memory, src_mask, tgt_mask)  # (B, T",
        "x = layer(x, memory, src_mask, None)  # (B, T",
        "a decoder that does not pass the target mask on to its layers (it sees the future)",
        "layer(x, memory, src_mask, tgt_mask) for each layer"),
    "transformer_decode_ignores_the_target_mask": _one(
        "Transformer", TRANSFORMER, "self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)",
        "self.decoder(self.tgt_embed(tgt), memory, src_mask, None)",
        "a Transformer whose decode does not pass the target mask on (it sees the future)",
        "self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)"),
    "transformer_without_xavier_init": _one(
        "Transformer", TRANSFORMER,
        "        for p in self.parameters():\n"
        "            if p.dim() > 1:\n                nn.init.xavier_uniform_(p)\n", "",
        "a Transformer left with PyTorch's default initialisation (no Xavier uniform)",
        "nn.init.xavier_uniform_ on every parameter with more than one dimension"),
    "transformer_embeddings_without_padding_idx": Bug("Transformer", {TRANSFORMER: [
        (f"self.{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
         f"self.{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout)") for s in ("src", "tgt")]},
        "a Transformer whose embeddings get no padding_idx (the padding rows are trained)",
        "TransformerEmbedding(..., padding_idx=pad_idx)"),
    "transformer_decodes_with_the_source_embedding": _one(
        "Transformer", TRANSFORMER, "self.decoder(self.tgt_embed(tgt),", "self.decoder(self.src_embed(tgt),",
        "a Transformer that embeds the target with the source embedding (tgt_embed is never used)",
        "self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)"),
    # assignment4
    "collate_without_the_shift": _one(
        "collate", DATA, "tgt_in = pad([[Vocab.SOS] + list(t) for _, t in pairs])",
        "tgt_in = pad([list(t) + [Vocab.EOS] for _, t in pairs])",
        "collate whose decoder input is the target itself, not shifted right behind <sos>",
        "tgt_in = <sos> + target, tgt_out = target + <eos>"),
    "noam_lr_no_step_check": _one(
        "noam_lr", TRAINING,
        '    if step < 1:\n        raise ValueError(f"step must be >= 1, got {step}")\n', "",
        "a Noam schedule that does not refuse step 0 (0 ** -0.5 divides by zero)",
        "raise ValueError naming step when step < 1"),
    "train_epoch_gradients_accumulate": _one(
        "train_epoch", TRAINING, "        optimizer.zero_grad()\n        logits = model(src, tgt_in)  # (B, T, V)",
        "        logits = model(src, tgt_in)  # (B, T, V)",
        "an epoch that never zeroes the gradients (each step adds to all the earlier ones)",
        "optimizer.zero_grad() before each backward"),
    "train_epoch_returns_the_last_loss": _one(
        "train_epoch", TRAINING, "return sum(losses) / max(len(losses), 1)", "return losses[-1]",
        "an epoch that returns its last batch's loss, not the mean over its batches",
        "return sum(losses) / len(losses)"),
    "greedy_decode_reads_the_first_position": _one(
        "greedy_decode", DECODING, "nxt = model.projection(out[:, -1])", "nxt = model.projection(out[:, 0])",
        "greedy decoding that predicts from the first position's output, not the last",
        "the next token comes from the last position: out[:, -1]"),
    "greedy_decode_one_token_past_max_len": _one(
        "greedy_decode", DECODING, "while ys.size(1) < max_len and", "while ys.size(1) <= max_len and",
        "greedy decoding that returns max_len + 1 tokens", "stop when ys has max_len tokens: ys.size(1) < max_len"),
}
BUGS.update(_GUARDED)

# Classic mistakes of tests/kit/heldout.py (issue 37, item 3) that the numerical forensics cannot tell
# (their values are no simple function of the expected ones), each written here as another student would
# write it: the held-out set is named by what the code computes, not by its text
_HELDOUT: dict[str, Bug] = {
    "layer_norm_without_eps": _one(
        "LayerNorm", LN, "torch.sqrt(var + self.eps)", "var.sqrt()",
        "LayerNorm without eps under the square root (a constant vector divides 0 by 0)",
        "normalise by torch.sqrt(var + eps)"),
    "layer_norm_statistics_over_the_batch": Bug("LayerNorm", {LN: [
        ("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(0, keepdim=True)"),
        ("var = x.var(dim=-1, keepdim=True, unbiased=False)", "var = x.var(0, keepdim=True, unbiased=False)")]},
        "LayerNorm with BatchNorm's axis: the statistics over the batch (dim 0), not each vector's features",
        "x.mean(dim=-1, keepdim=True), x.var(dim=-1, keepdim=True, unbiased=False)"),
    "feed_forward_adds_its_input": _one(
        "PositionwiseFeedForward", FFN, "return self.linear2(self.dropout(h))",
        "return self.linear2(self.dropout(h)) + x",
        "a feed-forward network that adds its input back (the residual belongs to ResidualConnection)",
        "return linear2(dropout(relu(linear1(x)))) alone"),
    # Kyubyong/transformer #81: an integer division makes every exponent 0
    "positional_encoding_integer_exponent": _one(
        "PositionalEncoding", PE,
        "torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))",
        "1.0 / torch.pow(10000.0, torch.arange(0, d_model, 2) // d_model)",
        "a positional table whose exponent 2i // d_model is an integer division (0: one frequency for all)",
        "a float exponent: torch.arange(0, d_model, 2).float() / d_model"),
    # zju3dv/LoFTR #41: -log(10000) / d_model // 2, an operator precedence slip
    "positional_encoding_exponent_floored": _one(
        "PositionalEncoding", PE, "(-math.log(10000.0) / d_model)", "math.floor(-math.log(10000.0) / d_model / 2)",
        "a positional table whose exponent is floored by // (operator precedence)",
        "div_term = exp(arange(0, d_model, 2) * (-log(10000) / d_model)), no //"),
    "positional_encoding_sliced_by_the_batch": _one(
        "PositionalEncoding", PE, "T = x.size(1)", "T = x.shape[0]",
        "a positional encoding sliced by x.size(0), the batch (a sequence-first tutorial's), not the length",
        "the inputs are (B, T, d_model): pe[:x.size(1)]"),
    # hyunwoongko/transformer #10: -inf, whose fully masked rows are 0/0
    "attention_fills_with_minus_inf": _one(
        "scaled_dot_product_attention", ATT, "masked_fill(~mask, torch.finfo(scores.dtype).min)",
        "masked_fill(mask == 0, -math.inf)",
        "attention that fills blocked scores with -inf (a row whose keys are all blocked is 0/0: NaN)",
        "fill with torch.finfo(scores.dtype).min"),
    "softmax_over_dim_1": _one(
        "scaled_dot_product_attention", ATT, "scores.softmax(dim=-1)", "torch.softmax(scores, 1)",
        "attention with the softmax over dim=1 (the heads, or the queries), not the keys",
        "softmax over the keys: dim=-1"),
    "attention_adds_the_boolean_mask": _one(
        "scaled_dot_product_attention", ATT, "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
        "scores = scores + mask.to(scores.dtype)",
        "attention that adds the boolean mask to the scores (+1 where allowed: nothing is blocked)",
        "scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"),
    "pad_mask_compares_to_zero": _one(
        "make_pad_mask", MASKS, "(tokens != pad_idx)", "(tokens > 0)",
        "a pad mask that takes token 0 for the padding, whatever pad_idx is",
        "compare with pad_idx: tokens != pad_idx"),
    # annotated-transformer #137: the padding unsqueezed on the query axis
    "tgt_mask_pad_over_the_queries": _one(
        "make_tgt_mask", MASKS, "return pad & causal", "return pad.permute(0, 1, 3, 2) & causal",
        "a target mask whose padding part hides queries (B, 1, T, 1), not keys",
        "make_pad_mask(tgt, pad_idx) (B, 1, 1, T) & make_causal_mask(T) (1, 1, T, T)"),
    "mha_keys_projected_with_w_q": _one(
        "MultiHeadAttention", MHA, "k = self.w_k(k)", "k = self.w_q(k)",
        "multi-head attention that projects the keys with w_q (copy-paste: w_k unused)", "k = self.w_k(k)"),
    "heads_split_interleaved": Bug("MultiHeadAttention", {MHA: [
        (f"self.w_{n}({n}).view(B, {t}, self.n_heads, self.d_k).transpose(1, 2)",
         f"self.w_{n}({n}).reshape(B, {t}, self.d_k, self.n_heads).transpose(1, 3).transpose(2, 3)")
        for n, t in (("q", "T_q"), ("k", "T_k"), ("v", "T_k"))]},
        "heads split as (B, T, d_k, h): head i takes every h-th column, not a contiguous block",
        "view(B, T, h, d_k).transpose(1, 2)"),
    "residual_without_the_skip": _one(
        "ResidualConnection", SUB, "return self.norm(x + self.dropout(sublayer(x)))",
        "return self.norm(self.dropout(sublayer(x)))",
        "a post-norm residual connection without the skip: norm(dropout(sublayer(x)))",
        "norm(x + dropout(sublayer(x)))"),
    # harvardnlp/harvardnlp.github.io #6: the Annotated Transformer's pre-norm where the paper has post-norm
    "residual_always_pre_norm": _one(
        "ResidualConnection", SUB, "        if self.norm_first:\n", "        if self.norm_first or True:\n",
        "a residual connection that is always pre-norm (the Annotated Transformer's), whatever norm_first says",
        "norm_first=False: norm(x + dropout(sublayer(x)))"),
    "encoder_final_norm_always": _one(
        "Encoder", ENC, "return self.norm(x) if self.norm_first else x", "return self.norm(x)  # always",
        "an encoder that applies its final LayerNorm in post-norm too (the Annotated Transformer's Encoder)",
        "apply the final norm only when norm_first"),
    "encoder_layer_feed_forward_without_residual": _one(
        "EncoderLayer", ENC, "return self.residuals[1](x, self.feed_forward)", "return self.feed_forward(x)",
        "an encoder layer whose feed-forward has no residual connection (nor its norm)",
        "return self.residuals[1](x, self.feed_forward)"),
    # Kamichanw/SeekDeeper #3, zhouhaoyi/Informer2020 #38: the cross-attention's mask
    "cross_attention_masked_with_the_target_mask": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)",
        "self.cross_attn(x, memory, memory, mask=tgt_mask)",
        "cross-attention masked with the target mask, not the source mask", "cross_attn(x, memory, memory, src_mask)"),
}
BUGS.update(_HELDOUT)

# Issue 44's round: the areas the held-out set's first round almost never named (assignment 4, multi-head
# attention's projections and heads, the whole model's wiring), each written as another student would
# write the held-out entry (tests/kit/heldout.py, heldout_reach.py) that computes the same thing
_TRAIN_STEP = "        optimizer.step()\n        if scheduler is not None:\n            scheduler.step()\n"
_REACH: dict[str, Bug] = {
    # assignment2: multi-head attention
    "mha_values_through_the_key_projection": _one(
        "MultiHeadAttention", MHA, "v = self.w_v(v).view(B, T_k,", "v = self.w_k(v).view(B, -1,",
        "multi-head attention whose values go through w_k (copy-paste: w_v unused)",
        "v = self.w_v(v) before splitting the heads"),
    "mha_heads_merged_interleaved": _one(
        "MultiHeadAttention", MHA, "out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)",
        "out.transpose(1, 2).transpose(2, 3).reshape(B, T_q, self.d_model)",
        "heads merged as (B, T, d_k, h): the output's columns interleave the heads",
        "out.transpose(1, 2).contiguous().view(B, T, d_model): head i's columns i*d_k:(i+1)*d_k"),
    "mha_self_attention_only": _one(
        "MultiHeadAttention", MHA, "        B, T_q, _ = q.shape\n",
        "        B, T_q, _ = q.shape\n        k = v = q  # self-attention\n",
        "multi-head attention whose keys and values come from the query (k and v ignored: no cross-attention)",
        "project the keys from k and the values from v: w_k(k), w_v(v)"),
    "mha_query_unprojected": _one(
        "MultiHeadAttention", MHA, "q = self.w_q(q).view(B, T_q,", "q = q.reshape(B, T_q,",
        "multi-head attention that splits the raw query into heads (w_q never applied)",
        "q = self.w_q(q) before splitting the heads"),
    "mha_projections_one_module": Bug("MultiHeadAttention", {MHA: [
        ("        self.w_k = nn.Linear(d_model, d_model)\n        self.w_v = nn.Linear(d_model, d_model)\n",
         "        self.w_k = self.w_q\n        self.w_v = self.w_q\n")]},
        "multi-head attention whose w_q, w_k and w_v are one module (one set of weights for all three)",
        "three separate nn.Linear(d_model, d_model) for w_q, w_k and w_v"),
    "mha_weights_mean_of_the_heads": _one(
        "MultiHeadAttention", MHA, "self.attention_weights = weights\n",
        "self.attention_weights = weights.sum(dim=1) / self.n_heads\n",
        "multi-head attention that keeps the attention weights averaged over the heads (B, T_q, T_k)",
        "keep every head's weights: self.attention_weights = weights, (B, h, T_q, T_k)"),
    # assignment3: the decoder's and the model's wiring
    "cross_attention_values_from_the_decoder": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)",
        "self.cross_attn(q=x, k=memory, v=x, mask=src_mask)",
        "cross-attention whose values are the decoder's input, not the memory",
        "cross_attn(x, memory, memory, src_mask): keys and values from the memory"),
    "cross_attention_queries_from_the_memory": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)",
        "self.cross_attn(q=memory, k=x, v=x, mask=src_mask)",
        "cross-attention with the memory as queries and the decoder's input as keys and values",
        "cross_attn(x, memory, memory, src_mask): queries from the decoder"),
    "cross_attention_unmasked": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)", "self.cross_attn(x, memory, memory)",
        "cross-attention without the source mask (the decoder attends to the source padding)",
        "cross_attn(x, memory, memory, src_mask)"),
    "decoder_layers_get_the_masks_swapped": _one(
        "Decoder", DEC, "x = layer(x, memory, src_mask, tgt_mask)  # (B, T",
        "x = layer(x, memory, src_mask=tgt_mask, tgt_mask=src_mask)  # (B, T",
        "a decoder that hands its layers the source mask as the target mask, and the reverse",
        "layer(x, memory, src_mask, tgt_mask)"),
    "transformer_encode_drops_the_source_mask": _one(
        "Transformer", TRANSFORMER, "return self.encoder(self.src_embed(src), src_mask)",
        "return self.encoder(self.src_embed(src), src_mask=None)",
        "a Transformer whose encode gives the encoder no source mask (it attends to the padding)",
        "self.encoder(self.src_embed(src), src_mask)"),
    "transformer_target_embedding_sized_by_the_source": _one(
        "Transformer", TRANSFORMER,
        "self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
        "self.tgt_embed = TransformerEmbedding(vocab_size=src_vocab_size, d_model=d_model, max_len=max_len,\n"
        "                                              dropout=dropout, padding_idx=pad_idx)",
        "a target embedding sized by the source vocabulary", "TransformerEmbedding(tgt_vocab_size, ...)"),
    "transformer_returns_the_decoder_output": _one(
        "Transformer", TRANSFORMER, "return self.projection(self.decode(memory, src_mask, tgt, tgt_mask))",
        "out = self.decode(memory, src_mask, tgt, tgt_mask)\n        return out",
        "a Transformer whose forward returns the decoder's output (B, T, d_model), not the logits",
        "return self.projection(decoder output): logits (B, T, tgt_vocab_size)"),
    "transformer_projects_onto_the_source_vocabulary": _one(
        "Transformer", TRANSFORMER, "self.projection = nn.Linear(d_model, tgt_vocab_size)",
        "self.projection = nn.Linear(in_features=d_model, out_features=src_vocab_size)",
        "a Transformer whose output projection is sized by the source vocabulary",
        "nn.Linear(d_model, tgt_vocab_size)"),
    "transformer_embeds_the_source_with_tgt_embed": _one(
        "Transformer", TRANSFORMER, "return self.encoder(self.src_embed(src), src_mask)",
        "return self.encoder(self.tgt_embed(src), src_mask=src_mask)",
        "a Transformer that embeds the source with the target embedding (src_embed is never used)",
        "self.encoder(self.src_embed(src), src_mask)"),
    "transformer_target_mask_causal_only": _one(
        "Transformer", TRANSFORMER, "tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
        "tgt_mask = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device).tril()[None, None]",
        "a Transformer whose target mask is causal only (the target padding not masked)",
        "tgt_mask = make_tgt_mask(tgt, pad_idx): padding and causality"),
    # assignment4: the training loop
    "train_epoch_zeroes_the_gradients_after_backward": Bug("train_epoch", {TRAINING: [
        ("        optimizer.zero_grad()\n        logits = model(src, tgt_in)  # (B, T, V)",
         "        logits = model(src, tgt_in)  # (B, T, V)"),
        ("        loss.backward()\n" + _TRAIN_STEP,
         "        loss.backward()\n        optimizer.zero_grad()  # fresh gradients for the step\n" + _TRAIN_STEP)]},
        "an epoch that zeroes the gradients after backward, before the step (the step sees none: no update)",
        "optimizer.zero_grad() before the forward pass, then loss.backward(), optimizer.step()"),
    "train_epoch_steps_the_scheduler_before_the_optimizer": Bug("train_epoch", {TRAINING: [
        ("        loss.backward()\n" + _TRAIN_STEP,
         "        loss.backward()\n        if scheduler is not None:\n            scheduler.step()\n"
         "        optimizer.step()\n")]},
        "an epoch that steps the scheduler before the optimizer (every batch updated at the next batch's rate)",
        "optimizer.step(), then scheduler.step()"),
    "train_epoch_returns_the_total_loss": _one(
        "train_epoch", TRAINING, "return sum(losses) / max(len(losses), 1)", "return sum(losses, 0.0)",
        "an epoch that returns the sum of its batch losses, not their mean", "return sum(losses) / len(losses)"),
    "train_epoch_weights_batches_by_size": Bug("train_epoch", {TRAINING: [
        ("    losses = []\n", "    losses, total, count = [], 0.0, 0\n"),
        ("        losses.append(loss.item())\n",
         "        losses.append(loss.item())\n        total += loss.item() * len(src)\n        count += len(src)\n"),
        ("return sum(losses) / max(len(losses), 1)", "return total / count")]},
        "an epoch whose mean loss weights each batch by its number of sentences (each batch should count once)",
        "return sum(losses) / len(losses)"),
    "train_epoch_targets_the_decoder_input": _one(
        "train_epoch", TRAINING, "loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))",
        "loss = loss_fn(logits.flatten(0, 1), tgt_in.flatten())",
        "an epoch whose loss compares the logits with tgt_in, not tgt_out (the target not shifted)",
        "loss_fn(logits.reshape(-1, V), tgt_out.reshape(-1))"),
    # assignment4: label smoothing and the schedule
    "label_smoothing_over_v_minus_1": Bug("LabelSmoothingLoss", {TRAINING: [
        ("q = torch.full_like(log_probs, self.smoothing / self.vocab_size)  # (N, V)",
         "q = torch.full_like(log_probs, self.smoothing / (log_probs.size(-1) - 1))"),
        ("q.scatter_add_(1, safe.unsqueeze(1), torch.full_like(log_probs[:, :1], 1.0 - self.smoothing))",
         "q.scatter_(1, safe[:, None], 1 - self.smoothing)")]},
        "label smoothing that spreads smoothing / (V - 1) over the other classes, not smoothing / V over all",
        "q = (1 - smoothing) on the target + smoothing / V on every class"),
    "label_smoothing_sums_the_tokens": _one(
        "LabelSmoothingLoss", TRAINING, "return (per_token * keep).sum() / keep.sum().clamp(min=1)",
        "return per_token[keep].sum()",
        "label smoothing summed over the non-pad tokens, not averaged", "divide by the number of non-pad targets"),
    "label_smoothing_full_mass_on_the_target": _one(
        "LabelSmoothingLoss", TRAINING, "torch.full_like(log_probs[:, :1], 1.0 - self.smoothing))",
        "torch.full_like(log_probs[:, :1], 1.0))",
        "label smoothing with 1, not 1 - smoothing, on the target (q sums to 1 + smoothing)",
        "(1 - smoothing) on the target, smoothing / V on every class"),
    "noam_lr_times_sqrt_d_model": _one(
        "noam_lr", TRAINING, "return d_model ** -0.5 * min(", "return d_model ** (1 / 2) * min(",
        "a Noam schedule multiplied by sqrt(d_model) instead of divided", "d_model ** -0.5 * min(...)"),
    "noam_lr_max_of_the_two": _one(
        "noam_lr", TRAINING, "return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)",
        "return max(step ** -0.5, step * warmup ** -1.5) / d_model ** 0.5",
        "a Noam schedule with max where the formula has min (it grows without bound)",
        "d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)"),
    "noam_lr_warmup_to_the_minus_half": _one(
        "noam_lr", TRAINING, "return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)",
        "return min(1 / step ** 0.5, step / warmup ** 0.5) / d_model ** 0.5",
        "a Noam schedule whose warm-up is step * warmup^-0.5, not step * warmup^-1.5",
        "warm-up term step * warmup ** -1.5"),
    # assignment4: the vocabulary and greedy decoding
    "vocab_sos_before_pad": _one(
        "Vocab", DATA, "self.itos = list(self.specials) + words",
        'self.itos = ["<sos>", "<pad>", "<eos>", "<unk>"] + words',
        "a vocabulary whose specials come in another order (<sos> at 0, <pad> at 1)",
        "itos starts <pad>, <sos>, <eos>, <unk>: ids 0, 1, 2, 3"),
    "vocab_counts_each_sentence_once": _one(
        "Vocab", DATA, "Counter(tok for seq in sequences for tok in seq)",
        "Counter(t for s in map(set, sequences) for t in s)",
        "a vocabulary that counts the sentences a token occurs in, not its occurrences",
        "count every occurrence: Counter(tok for seq in sequences for tok in seq)"),
    "greedy_decode_stops_at_the_first_eos": _one(
        "greedy_decode", DECODING, "            done = done | (nxt == eos_idx)\n",
        "            done = done | (nxt == eos_idx)\n            if done.any():\n                break\n",
        "greedy decoding that stops the whole batch when one row emits <eos>",
        "stop when every row has emitted <eos>: done.all()"),
    "greedy_decode_eval_not_called": _one(
        "greedy_decode", DECODING, "    model.eval()\n    with torch.no_grad():",
        "    model.eval\n    with torch.no_grad():",
        "greedy decoding that names model.eval without calling it (dropout stays on)", "call model.eval()"),
}
BUGS.update(_REACH)

# `grade adequacy`: checks (fnmatch patterns of their ids) that are expected to catch no entry of this
# table, and why; any other check that catches none is flagged for a look (or a new entry)
UNCAUGHT = {
    "*_stays_on_the_inputs_device": "device placement: the entries here compute a wrong value on every device "
                                    "(but pe a plain attribute, which PositionalEncoding's does catch); a tensor "
                                    "made on the CPU is another kind (tests/kit/mutants.py has some)",
    "*_is_built_on_the_given_device": "device placement: as *_stays_on_the_inputs_device",
    "*_has_named_*": "the contract's names, which loading the checks' weights relies on: every entry keeps them",
    "feed_forward_treats_positions_independently": "position mixing: the feed-forward network has no operation over "
                                                   "T for a classic bug to get wrong; the check guards code that "
                                                   "adds one (a reshape that interleaves positions, a mean over T)",
}
