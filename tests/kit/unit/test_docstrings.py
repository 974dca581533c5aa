"""Every requirement a check grades is written where students read: the component's docstring.

For each check of course.toml (public and hidden tiers; the GPU tier's are the same
requirements on another device), the words of the requirement it grades must be in the
docstring of its component as the stubs in assignments/ hand it out (the class's docstring
and its methods', or the function's), whitespace and case aside. A check is matched by its
own entry in REQUIRES, else by the first rule of BY_SUFFIX its id ends with. The stubs are
read as text (ast), never imported.
"""

import ast
import re
from functools import cache

import pytest

from grader import load_course
from tests.kit.conftest import ROOT

COURSE = load_course(ROOT / "course.toml")
COMPONENTS = {c.name: (a.name, c) for a in COURSE.assignments.values() for c in a.components}

DEVICE = "any tensor it makes is made on the input's device"
EVAL = "in eval() mode it is deterministic: dropout is off"
GRADS = "gradients reach every parameter"
NAMES = "the grader relies on these names"
BLOCKED = "a key that the mask blocks (padding) has no effect on any output"
FUTURE = "no position sees a later target position"

# What each component is: the definition its reference comparisons grade (matches_torch,
# matches_reference, matches_stored_reference, with_reference_parts, matches_formula, ...)
DEFINITION = {
    "LayerNorm": ["y = gamma * (x - mean) / sqrt(var + eps) + beta", "biased: divide by d_model"],
    "PositionwiseFeedForward": ["FFN(x) = linear2(dropout(relu(linear1(x))))"],
    "PositionalEncoding": ["pe[p, 2i] = sin(p / 10000^(2i / d_model))", "pe[p, 2i+1] = cos(p / 10000^(2i / d_model))",
                           "forward(x) = dropout(x + pe[:T])", "with an odd d_model the last column is a sine"],
    "TokenEmbedding": ["forward(x) = embedding(x) * sqrt(d_model)"],
    "TransformerEmbedding": ["forward(x) = position(token(x))"],
    "scaled_dot_product_attention": ["scores = q @ k^T / sqrt(d_k)", "weights = softmax(scores, dim=-1)",
                                     "out = weights @ v", "Returns (out, weights)"],
    "make_pad_mask": ["mask[b, 0, 0, j] = tokens[b, j] != pad_idx", "(B, 1, 1, T) torch.bool"],
    "make_causal_mask": ["mask[0, 0, i, j] = j <= i", "(1, 1, T, T) torch.bool"],
    "make_tgt_mask": ["mask[b, 0, i, j] = (j <= i) and tgt[b, j] != pad_idx", "(B, 1, T, T) torch.bool"],
    "MultiHeadAttention": ["out = w_o(concat(head_1, ..., head_h))", "head i uses columns i*d_k:(i+1)*d_k",
                           "the layout of torch.nn.MultiheadAttention"],
    "ResidualConnection": ["forward(x, sublayer) = norm(x + dropout(sublayer(x)))",
                           "forward(x, sublayer) = x + dropout(sublayer(norm(x)))"],
    "EncoderLayer": ["x = residuals[0](x, lambda x: self_attn(x, x, x, src_mask))",
                     "x = residuals[1](x, feed_forward)"],
    "Encoder": ["for layer in layers: x = layer(x, src_mask)", "if norm_first: x = norm(x)"],
    "DecoderLayer": ["x = residuals[0](x, lambda x: self_attn(x, x, x, tgt_mask))",
                     "x = residuals[1](x, lambda x: cross_attn(x, memory, memory, src_mask))",
                     "x = residuals[2](x, feed_forward)"],
    "Decoder": ["for layer in layers: x = layer(x, memory, src_mask, tgt_mask)", "if norm_first: x = norm(x)"],
    "Transformer": ["memory = encoder(src_embed(src), src_mask)",
                    "out = decoder(tgt_embed(tgt), memory, src_mask, tgt_mask)", "logits = projection(out)"],
    "Vocab": ["<pad> = 0", "<sos> = 1", "<eos> = 2", "<unk> = 3", "occurs at least `min_freq` times",
              "unknown tokens -> 3"],
    "collate": ["tgt_in [<sos>] + tgt_ids", "tgt_out tgt_ids + [<eos>]", "right-padded with `pad_idx`"],
    "LabelSmoothingLoss": ["q[c] = (1 - smoothing) * [c == target] + smoothing / V",
                           "averaged over the positions whose target is not `pad_idx`",
                           "F.cross_entropy(logits, targets, ignore_index=pad_idx, label_smoothing=smoothing)"],
    "noam_lr": ["lr(step) = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)", "Returns a number"],
    "train_epoch": ["optimizer.zero_grad()", "loss.backward()", "optimizer.step()"],
    "greedy_decode": ["next = model.projection(out[:, -1]).argmax(-1)",
                      "each emitted token equals the argmax of the teacher-forced forward pass"],
}

# Where each component's dropout sits (the dropout placement checks), or the parts it is passed on to
DROPOUT_AT = {
    "PositionwiseFeedForward": ["FFN(x) = linear2(dropout(relu(linear1(x))))"],
    "PositionalEncoding": ["forward(x) = dropout(x + pe[:T])"],
    "TransformerEmbedding": ["position PositionalEncoding(d_model, max_len, dropout)"],
    "scaled_dot_product_attention": ["weights = dropout(weights)"],
    "MultiHeadAttention": ["dropout nn.Dropout(dropout), applied to the attention weights"],
    "ResidualConnection": ["dropout nn.Dropout(dropout), applied to the sublayer's output"],
    "EncoderLayer": ["self_attn MultiHeadAttention(d_model, n_heads, dropout)",
                     "feed_forward PositionwiseFeedForward(d_model, d_ff, dropout)",
                     "residuals nn.ModuleList of 2 ResidualConnection(d_model, dropout, norm_first)"],
    "Encoder": ["EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first)"],
    "DecoderLayer": ["self_attn MultiHeadAttention(d_model, n_heads, dropout)",
                     "cross_attn MultiHeadAttention(d_model, n_heads, dropout)",
                     "feed_forward PositionwiseFeedForward(d_model, d_ff, dropout)",
                     "residuals nn.ModuleList of 3 ResidualConnection(d_model, dropout, norm_first)"],
    "Decoder": ["DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first)"],
    "Transformer": ["TransformerEmbedding(src_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
                    "TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
                    "Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)",
                    "Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)"],
}

# Checks named after a kind of requirement: the words of that requirement (None: the definition)
BY_SUFFIX: dict[str, list[str] | None] = {
    "_stays_on_the_inputs_device": [DEVICE],
    "_dropout_is_inactive_in_eval": [EVAL],
    "_dropout_sits_where_the_docstring_says": None,  # DROPOUT_AT: where the dropout sits, or whom it is passed to
    "_gradients_reach_every_parameter": [GRADS],
    "_gradients_match_torch": ["Gradients with respect to"],
    "_has_named_parts": [NAMES],
    "_has_named_layers": [NAMES],
    "_has_named_embedding": [NAMES, "embedding nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)"],
    "_with_reference_parts": None,
    "_with_reference_attention": None,
    "_with_reference_norm": None,
    "_matches_reference": None,
    "_matches_stored_reference": None,
    "_matches_torch": None,
    "_matches_formula": None,
    "_matches_definition": None,
    "_matches_the_definition": None,
    "_matches_its_definition": None,
    "_matches_its_parts": None,
    "_source_padding_does_not_leak": [BLOCKED],
    "_does_not_leak_the_future": [FUTURE],
    "_batch_elements_are_independent": ["Batch elements are independent"],
    "_final_norm_only_with_norm_first": ["norm LayerNorm(d_model), always created, applied only when norm_first"],
}

# Checks of one requirement of their own
REQUIRES: dict[str, list[str]] = {
    "layer_norm_rows_are_normalised": ["y = gamma * (x - mean) / sqrt(var + eps) + beta"],
    "layer_norm_has_gamma_and_beta": [NAMES, "gamma nn.Parameter of shape (d_model,), initialised to ones",
                                      "beta nn.Parameter of shape (d_model,), initialised to zeros"],
    "layer_norm_default_eps_is_the_contracts": ["eps defaults to 1e-5"],
    "layer_norm_applies_gamma_and_beta_per_feature": ["y = gamma * (x - mean) / sqrt(var + eps) + beta",
                                                      "(d_model,)"],
    "layer_norm_is_stable_for_large_offsets": ["not as E[x^2] - E[x]^2", "accurate for vectors far from 0"],
    "feed_forward_treats_positions_independently": ["The positions never mix"],
    "positional_encoding_pe_is_a_buffer": ["registered with register_buffer", "must not be a Parameter",
                                           "persistent or not", "either is accepted"],
    "positional_encoding_moves_with_to": ["follow .to(device) and .to(dtype)"],
    "positional_encoding_adds_pe_to_input": ["forward(x) = dropout(x + pe[:T])"],
    "positional_encoding_rejects_sequences_longer_than_max_len": [
        "A sequence longer than max_len raises ValueError naming T and max_len"],
    "positional_encoding_default_max_len_is_5000": ["max_len defaults to 5000"],
    "token_embedding_scales_by_sqrt_d_model": ["* sqrt(d_model)"],
    "token_embedding_padding_row_is_zero": ["With a padding_idx, that token's row is a zero vector"],
    "transformer_embedding_passes_padding_idx_to_its_token_embedding": [
        "token TokenEmbedding(vocab_size, d_model, padding_idx)", "Each part gets the arguments given here, passed on",
        "before any weights are loaded"],
    "sdpa_weights_rows_sum_to_one": ["each row sums to 1"],
    "sdpa_blocked_keys_get_zero_weight": ["a blocked key then gets weight exactly 0"],
    "sdpa_fully_blocked_row_stays_finite": ["a row whose keys are all blocked stays finite"],
    "sdpa_masks_in_half_precision": ["torch.finfo(scores.dtype).min", "a fixed -1e9 overflows in float16",
                                     "it must work in half precision too"],
    "sdpa_scales_scores_by_sqrt_d_k": ["scores = q @ k^T / sqrt(d_k)"],
    "sdpa_output_is_a_convex_combination_of_values": ["each row sums to 1", "out = weights @ v"],
    "sdpa_applies_dropout_to_the_weights": ["weights = dropout(weights)",
                                            "the weights after dropout (the ones that multiplied v)"],
    "causal_mask_is_lower_triangular": ["lower-triangular, diagonal included"],
    "causal_mask_accepts_a_device": ["on `device`"],
    "causal_mask_is_built_on_the_given_device": ["on `device`"],
    "mha_matches_torch_with_a_causal_mask": ["(B, 1, T, T) from make_tgt_mask",
                                             "the layout of torch.nn.MultiheadAttention"],
    "mha_heads_use_contiguous_columns": ["head i uses columns i*d_k:(i+1)*d_k"],
    "mha_keeps_attention_weights": ["attention_weights after every forward, the weights (B, n_heads, T_q, T_k)"],
    "mha_rejects_d_model_not_divisible_by_n_heads": [
        "d_model % n_heads != 0 raises ValueError with a message that names both values"],
    "mha_causal_self_attention_does_not_leak": ["True = may attend"],
    "residual_post_norm_matches_formula": ["forward(x, sublayer) = norm(x + dropout(sublayer(x)))"],
    "residual_pre_norm_matches_formula": ["forward(x, sublayer) = x + dropout(sublayer(norm(x)))"],
    "decoder_layer_attends_to_the_memory": ["Every output depends on the memory"],
    "transformer_forward_builds_its_masks_from_pad_idx": ["src_mask = make_pad_mask(src, pad_idx)",
                                                          "tgt_mask = make_tgt_mask(tgt, pad_idx)"],
    "transformer_init_is_xavier_uniform": ["gets nn.init.xavier_uniform_"],
    "transformer_init_with_reference_parts": ["gets nn.init.xavier_uniform_"],
    "transformer_padding_rows_are_zero": ["the embeddings' padding rows are set back to zero"],
    "transformer_padding_rows_get_no_gradient": ["also gives the padding rows no gradient",
                                                 "checked as built, before weights are loaded"],
    "vocab_specials_come_first": ["The four special tokens always come first, with fixed ids"],
    "vocab_encode_decode_round_trip": ["len(vocab) the number of tokens, specials included",
                                       "every id mapped back as it is"],
    "vocab_maps_unknown_tokens_to_unk": ["unknown tokens -> 3"],
    "vocab_min_freq_drops_rare_tokens": ["occurs at least `min_freq` times", "Every occurrence counts"],
    "vocab_decode_maps_ids_as_they_are": ["decode does not strip anything"],
    "vocab_matches_reference_on_unseen_and_seen_tokens": ["unknown tokens -> 3"],
    "collate_shifts_the_target": ["tgt_in [<sos>] + tgt_ids", "tgt_out tgt_ids + [<eos>]"],
    "collate_pads_src_and_tgt_independently": ["src and tgt are padded independently"],
    "label_smoothing_loss_ignores_padding": ["averaged over the positions whose target is not `pad_idx`"],
    "noam_lr_warms_up_then_decays": ["grows linearly for the first `warmup` steps, peaks at step == warmup",
                                     "decays like 1/sqrt(step)"],
    "noam_lr_rejects_step_0": ["step < 1 raises ValueError (message: f\"step must be >= 1, got {step}\")"],
    "train_epoch_updates_like_the_definition": ["one optimiser update per batch", "Put the model in training mode"],
    "train_epoch_returns_the_mean_batch_loss": ["Return the mean of the batch losses",
                                                "not an average weighted by sentences or tokens", "as a number"],
    "train_epoch_steps_the_scheduler_once_per_batch": ["once per batch, not per epoch"],
    "train_epoch_steps_the_scheduler_after_the_optimizer": ["optimizer.step() scheduler.step()"],
    "end_to_end_training_lowers_the_loss": ["the loss goes down"],
    "end_to_end_training_reaches_accuracy": ["exact match reaches 75%"],
    "greedy_decode_matches_teacher_forced_argmax": [
        "each emitted token equals the argmax of the teacher-forced forward pass"],
    "greedy_decode_stops_at_eos_and_pads_after": ["its later positions hold model.pad_idx",
                                                  "stop as soon as every row has emitted <eos>"],
    "greedy_decode_respects_max_len": ["<sos> counts toward max_len"],
    "greedy_decode_runs_in_eval_mode": ["put the model in eval mode"],
    "greedy_decode_uses_the_given_special_ids": ["sos_idx and eos_idx are the ids given"],
}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@cache
def shared(assignment: str) -> str:
    """The note every component of `assignment` shares (device, eval() mode, gradients): the module
    docstring of its package, so that each component's docstring keeps what is its own."""
    return ast.get_docstring(ast.parse((ROOT / "assignments" / assignment / "__init__.py").read_text())) or ""


@cache
def docstring(component: str) -> str:
    """The component's docstring in the stubs, its methods' included, and its assignment's shared
    note, flattened."""
    assignment, spec = COMPONENTS[component]
    tree = ast.parse((ROOT / "assignments" / assignment / spec.file).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == component)
    docs = [ast.get_docstring(node) or "", shared(assignment)]
    if isinstance(node, ast.ClassDef):
        docs += [ast.get_docstring(m) or "" for m in node.body if isinstance(m, ast.FunctionDef)]
    return _flat("\n".join(docs))


def requirement(check: str, component: str) -> list[str]:
    if check in REQUIRES:
        return REQUIRES[check]
    for suffix, words in BY_SUFFIX.items():
        if check.endswith(suffix) and words is not None:
            return words
        if check.endswith(suffix):
            return (DROPOUT_AT if "dropout" in suffix else DEFINITION)[component]
    raise AssertionError(f"{check} ({component}): no entry says what it grades; add one to REQUIRES")


GRADED = [pytest.param(check.id, name, id=check.id) for name, (_, spec) in COMPONENTS.items()
          for check in spec.checks if check.tier in ("public", "hidden")]


@pytest.mark.parametrize(("check", "component"), GRADED)
def test_what_a_check_grades_is_written_in_its_components_docstring(check, component):
    text = docstring(component)
    missing = [words for words in requirement(check, component) if _flat(words) not in text]
    assert not missing, f"{check} grades what {component}'s docstring does not say: {missing}"


def test_every_entry_names_a_check_of_the_course():
    checks = {check for check, _ in (p.values for p in GRADED)}
    assert set(REQUIRES) <= checks, set(REQUIRES) - checks
    assert set(DEFINITION) == set(COMPONENTS)


SHARED = [DEVICE, EVAL, GRADS]
# the gaps that three implementations written from the docstrings alone had to guess (issue 44)
GAPS = {
    "MultiHeadAttention": ["attention_weights holds them before dropout", "the output uses the weights after dropout"],
    "LabelSmoothingLoss": ["V is `vocab_size`"],
    "Vocab": ["A token of the data spelled like a special", "keeps the special's id and gets no second one"],
    "greedy_decode": ["with max_len <= 1 (0 or negative included) nothing is decoded"],
    "train_epoch": ["With no batches at all it updates nothing and returns 0.0."],
    "LayerNorm": ["within 1e-5 + 1e-4 * |their value| per element"],
}


@pytest.mark.parametrize("component", sorted(GAPS))
def test_the_gaps_students_guessed_are_written(component):
    for words in GAPS[component]:
        assert _flat(words) in docstring(component), (component, words)


@pytest.mark.parametrize("assignment", sorted(COURSE.assignments))
def test_what_every_component_shares_is_said_once_in_the_assignments_note(assignment):
    note = _flat(shared(assignment))
    assert all(_flat(words) in note for words in SHARED), note
    for name in COURSE.assignments[assignment].files:
        text = _flat((ROOT / "assignments" / assignment / name).read_text())
        for words in SHARED:
            assert _flat(words) not in text, (name, words)  # once, in the note: not again in each docstring
