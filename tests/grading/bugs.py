"""The course's table of classic bugs: one per entry, named, with the component it lives in, the
patch that puts it into the reference, what the code then computes and the fix.

Course material for instructors, next to the suites: it does not ship to students (a bug is the
reference with one change). `grade expected` grades each bug's tree and stores what its public
checks report (outputs, never code) in public/expected/bugs.json, from which the grader names a
student's bug (grader.diagnosis); the kit's fairness tests are stated over the same table
(tests/kit/mutants.py, tests/kit/test_attribution.py).
"""

from dataclasses import dataclass

LN, FFN, PE, EMB = ("assignment1/layer_norm.py", "assignment1/feed_forward.py", "assignment1/positional_encoding.py",
                    "assignment1/embedding.py")
ATT, MASKS, MHA = "assignment2/attention.py", "assignment2/masks.py", "assignment2/multi_head_attention.py"
SUB, ENC, DEC = "assignment3/sublayer.py", "assignment3/encoder.py", "assignment3/decoder.py"
TRANSFORMER = "assignment3/transformer.py"

# what each bug's code computes, and the fix: the words of a diagnosis
TEXT = {
    "layer_norm_unbiased_variance": (
        "LayerNorm with the unbiased variance (divided by d_model - 1)",
        "divide by d_model: x.var(dim=-1, unbiased=False)"),
    "layer_norm_eps_outside_sqrt": (
        "LayerNorm with eps added outside the square root",
        "normalise by torch.sqrt(var + eps)"),
    "layer_norm_default_eps_1e_12": (
        "LayerNorm whose eps defaults to 1e-12",
        "make eps default to 1e-5, as the contract says"),
    "feed_forward_no_relu": (
        "the feed-forward network without its ReLU",
        "apply F.relu between the two linear layers"),
    "positional_encoding_sin_cos_swapped": (
        "the positional table with cos in place of sin",
        "use sin on the even columns and cos on the odd ones"),
    "token_embedding_no_scale": (
        "the token embedding not scaled by sqrt(d_model)",
        "multiply the embedding by math.sqrt(d_model)"),
    "transformer_embedding_no_position": (
        "the embedding without the positional encoding",
        "add the positional encoding to the scaled token embedding"),
    "softmax_over_the_wrong_dim": (
        "attention with the softmax over the queries (dim=-2)",
        "take the softmax over the keys, dim=-1"),
    "no_sqrt_d_k": (
        "attention without the 1/sqrt(d_k) scale",
        "divide the scores by math.sqrt(d_k)"),
    "mask_applied_after_softmax": (
        "attention that masks the weights after the softmax",
        "fill the blocked scores before the softmax"),
    "mask_polarity_inverted": (
        "attention that blocks where the mask is True",
        "fill where the mask is False: masked_fill(~mask, ...)"),
    "pad_mask_polarity_inverted": (
        "a pad mask that is True on the padding",
        "keep the tokens: tokens != pad_idx"),
    "causal_mask_off_by_one": (
        "a causal mask without its diagonal (each position blind to itself)",
        "use .tril() with no offset"),
    "tgt_mask_or_instead_of_and": (
        "a target mask that combines padding and causality with or",
        "combine them with and: pad & causal"),
    "heads_split_with_the_wrong_view": (
        "heads split with view(B, h, T, d_k) without the transpose",
        "view(B, T, h, d_k) then transpose(1, 2)"),
    "heads_merged_without_transpose": (
        "heads merged without transposing back",
        "out.transpose(1, 2).contiguous().view(B, T, d_model)"),
    "post_norm_wired_as_pre_norm": (
        "a residual connection wired pre-norm where post-norm is asked, and the reverse",
        "norm_first: x + sublayer(norm(x)); else norm(x + sublayer(x))"),
    "encoder_layer_skips_the_mask": (
        "an encoder layer whose self-attention ignores the source mask",
        "pass src_mask to the self-attention"),
    "encoder_missing_final_norm": (
        "a pre-norm encoder without its final LayerNorm",
        "return self.norm(x) when norm_first"),
    "cross_attention_fed_the_decoder_input_as_keys": (
        "cross-attention over the decoder's own input instead of the memory",
        "cross_attn(x, memory, memory, src_mask)"),
    "decoder_final_norm_always": (
        "a decoder that applies its final LayerNorm in post-norm too",
        "apply the final norm only when norm_first"),
    "forward_without_padding_mask": (
        "a Transformer that does not mask the source padding",
        "src_mask = make_pad_mask(src, pad_idx), passed to encoder and decoder"),
    "padding_rows_not_zeroed": (
        "embeddings whose padding rows are not zeroed at initialisation",
        "zero the pad_idx rows of the embedding weights"),
}


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


def _one(component: str, file: str, old: str, new: str) -> Bug:
    return Bug(component, {file: [(old, new)]})


def _told(name: str, bug: Bug) -> Bug:
    message, fix = TEXT[name]
    return Bug(bug.component, bug.patches, message, fix)


_BUGS: dict[str, Bug] = {
    # assignment1
    "layer_norm_unbiased_variance": _one("LayerNorm", LN, "unbiased=False", "unbiased=True"),
    "layer_norm_eps_outside_sqrt": _one("LayerNorm", LN, "torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)"),
    "layer_norm_default_eps_1e_12": _one("LayerNorm", LN, "eps: float = 1e-5", "eps: float = 1e-12"),
    "feed_forward_no_relu": _one("PositionwiseFeedForward", FFN, "F.relu(self.linear1(x))", "self.linear1(x)"),
    "positional_encoding_sin_cos_swapped": _one("PositionalEncoding", PE, "torch.sin(", "torch.cos("),
    "token_embedding_no_scale": _one("TokenEmbedding", EMB, "* math.sqrt(self.d_model)", ""),
    "transformer_embedding_no_position": _one("TransformerEmbedding", EMB, "return self.position(self.token(x))",
                                              "return self.token(x)"),
    # assignment2
    "softmax_over_the_wrong_dim": _one("scaled_dot_product_attention", ATT, "scores.softmax(dim=-1)",
                                       "scores.softmax(dim=-2)"),
    "no_sqrt_d_k": _one("scaled_dot_product_attention", ATT, " / math.sqrt(d_k)", ""),
    "mask_applied_after_softmax": _one(
        "scaled_dot_product_attention", ATT,
        "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n",
        "        pass\n"
        "    weights = scores.softmax(dim=-1)  # (..., T_q, T_k)\n"
        "    if mask is not None:\n"
        "        weights = weights.masked_fill(~mask, 0.0)\n"),
    "mask_polarity_inverted": _one("scaled_dot_product_attention", ATT, "masked_fill(~mask,", "masked_fill(mask,"),
    "pad_mask_polarity_inverted": _one("make_pad_mask", MASKS, "(tokens != pad_idx)", "(tokens == pad_idx)"),
    "causal_mask_off_by_one": _one("make_causal_mask", MASKS, ".tril()[None, None]", ".tril(-1)[None, None]"),
    "tgt_mask_or_instead_of_and": _one("make_tgt_mask", MASKS, "return pad & causal", "return pad | causal"),
    "heads_split_with_the_wrong_view": Bug("MultiHeadAttention", {MHA: [
        (f"self.w_{n}({n}).view(B, {t}, self.n_heads, self.d_k).transpose(1, 2)",
         f"self.w_{n}({n}).view(B, self.n_heads, {t}, self.d_k)") for n, t in (("q", "T_q"), ("k", "T_k"),
                                                                               ("v", "T_k"))]}),
    "heads_merged_without_transpose": _one("MultiHeadAttention", MHA,
                                           "out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)",
                                           "out.reshape(B, T_q, self.d_model)"),
    # assignment3
    "post_norm_wired_as_pre_norm": _one("ResidualConnection", SUB, "        if self.norm_first:\n",
                                        "        if not self.norm_first:\n"),
    "encoder_layer_skips_the_mask": _one("EncoderLayer", ENC, "self.self_attn(x, x, x, src_mask)",
                                         "self.self_attn(x, x, x)"),
    "encoder_missing_final_norm": _one("Encoder", ENC, "return self.norm(x) if self.norm_first else x", "return x"),
    "cross_attention_fed_the_decoder_input_as_keys": _one(
        "DecoderLayer", DEC, "self.cross_attn(x, memory, memory, src_mask)", "self.cross_attn(x, x, x, None)"),
    "decoder_final_norm_always": _one("Decoder", DEC, "return self.norm(x) if self.norm_first else x",
                                      "return self.norm(x)"),
    "forward_without_padding_mask": _one("Transformer", TRANSFORMER,
                                         "src_mask = make_pad_mask(src, self.pad_idx)  # (B, 1, 1, S)",
                                         "src_mask = None"),
    "padding_rows_not_zeroed": _one("Transformer", TRANSFORMER,
                                    "self.src_embed.token.embedding.weight[pad_idx].zero_()", "pass"),
}


BUGS: dict[str, Bug] = {name: _told(name, bug) for name, bug in _BUGS.items()}
