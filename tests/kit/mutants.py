"""The kit's mutant tables: one classic bug per entry, named, with the component it lives in.

A mutant is a copy of solutions/ with textual patches ({file: [(old, new), ...]}). The
kit's fairness properties are stated over these tables (tests/kit/sandbox/test_attribution.py),
and each assignment's tests grade its own entries (tests/kit/sandbox/test_assignmentN.py).
"""

from dataclasses import dataclass

from tests.grading.bugs import ATT, BUGS, DEC, DROPOUT, EMB, ENC, FFN, LN, MASKS, MHA, PE, SUB, TRANSFORMER, Bug

__all__ = ["ASSIGNMENT4_BUGS", "ATT", "BUGS", "DEC", "DROPOUT", "EMB", "ENC", "FFN", "LN", "MASKS", "MHA", "PE",
           "SUB", "TRANSFORMER", "Bug"]


def _one(component: str, file: str, old: str, new: str) -> Bug:
    return Bug(component, {file: [(old, new)]})


def patches(*names: str) -> dict[str, list[tuple[str, str]]]:
    """The patches of several bugs together (bugs in one file are applied in order)."""
    merged: dict[str, list[tuple[str, str]]] = {}
    for name in names:
        for file, edits in {**BUGS, **ASSIGNMENT4_BUGS}[name].patches.items():
            merged.setdefault(file, []).extend(edits)
    return merged


# assignment4's bugs, for the fairness properties over its composites (train_epoch, whose end-to-end
# checks train with Vocab, collate, LabelSmoothingLoss, noam_lr and the Transformer; greedy_decode,
# built on the masks): each part bug here stops the model learning or decoding the test dates.
DATA, TRAINING, DECODING = "assignment4/data.py", "assignment4/training.py", "assignment4/decoding.py"
ASSIGNMENT4_BUGS: dict[str, Bug] = {
    "vocab_specials_after_the_words": _one("Vocab", DATA, "self.itos = list(self.specials) + words",
                                           "self.itos = words + list(self.specials)"),
    "collate_without_the_shift": _one("collate", DATA, "tgt_in = pad([[Vocab.SOS] + list(t) for _, t in pairs])",
                                      "tgt_in = pad([list(t) + [Vocab.EOS] for _, t in pairs])"),
    "label_smoothing_weights_swapped": Bug("LabelSmoothingLoss", {TRAINING: [
        ("torch.full_like(log_probs, self.smoothing / self.vocab_size)",
         "torch.full_like(log_probs, (1.0 - self.smoothing) / self.vocab_size)"),
        ("torch.full_like(log_probs[:, :1], 1.0 - self.smoothing)",
         "torch.full_like(log_probs[:, :1], self.smoothing)")]}),
    "noam_lr_warmup_exponent_sign": _one("noam_lr", TRAINING, "step * warmup ** -1.5", "step * warmup ** 1.5"),
    "train_epoch_steps_the_scheduler_once_per_epoch": _one(
        "train_epoch", TRAINING,
        "        if scheduler is not None:\n            scheduler.step()\n        losses.append(loss.item())",
        "        losses.append(loss.item())\n    if scheduler is not None:\n        scheduler.step()"),
    "greedy_decode_predicts_after_eos": _one("greedy_decode", DECODING, "nxt = nxt.masked_fill(done, model.pad_idx)",
                                             "pass"),
}

# Correct solutions written differently: each must keep every point.
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

VARIANTS = {
    "einsum_and_neg_inf_masking": {ATT: EINSUM_NEG_INF},
    "fused_projection": {MHA: FUSED_PROJECTION},
    "masks_written_differently": {MASKS: [
        ("(tokens != pad_idx)[:, None, None, :]", "tokens.ne(pad_idx).unsqueeze(1).unsqueeze(2)"),
        ("torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]",
         "(torch.arange(T, device=device)[None, :] <= torch.arange(T, device=device)[:, None]).view(1, 1, T, T)")]},
}


# Device-placement bugs: right on the CPU, broken on a GPU; each must cost its own component its
# device-placement check (`*_stays_on_the_inputs_device`) on a machine without one, and nothing
# elsewhere (tests/kit/sandbox/test_device.py). `line`: the text of the line the report must name.
@dataclass(frozen=True)
class DeviceBug(Bug):
    check: str = ""
    line: str = ""


def _device(component: str, check: str, file: str, old: str, new: str, line: str) -> DeviceBug:
    return DeviceBug(component, {file: [(old, new)]}, check=check, line=line)


DEVICE_BUGS: dict[str, DeviceBug] = {
    "transformer_builds_its_causal_mask_on_the_cpu": _device(
        "Transformer", "transformer_stays_on_the_inputs_device", TRANSFORMER,
        "tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
        "T = tgt.size(1)\n        causal = torch.ones(T, T, dtype=torch.bool).tril()  # on the CPU, wherever tgt is\n"
        "        tgt_mask = make_pad_mask(tgt, self.pad_idx) & causal",
        "causal = torch.ones(T, T, dtype=torch.bool).tril()"),
    "tgt_mask_builds_its_causal_part_on_the_cpu": _device(
        "make_tgt_mask", "tgt_mask_stays_on_the_inputs_device", MASKS,
        "make_causal_mask(tgt.size(1), device=tgt.device)", "make_causal_mask(tgt.size(1))",
        "causal = make_causal_mask(tgt.size(1))"),
    "attention_scale_kept_in_a_cpu_tensor": _device(
        "scaled_dot_product_attention", "sdpa_stays_on_the_inputs_device", ATT,
        "scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)",
        "scores = q @ k.transpose(-2, -1) / torch.tensor([d_k]).sqrt()",
        "scores = q @ k.transpose(-2, -1) / torch.tensor([d_k]).sqrt()"),
    "positional_table_kept_as_a_plain_attribute": _device(
        "PositionalEncoding", "positional_encoding_stays_on_the_inputs_device", PE,
        'self.register_buffer("pe", pe)', "self.pe = pe", "return self.dropout(x + self.pe[:T])"),
    # host copies: on a GPU the mask comes back on the CPU, or the weights leave the device
    "pad_mask_built_from_python_lists": _device(
        "make_pad_mask", "pad_mask_stays_on_the_inputs_device", MASKS,
        "return (tokens != pad_idx)[:, None, None, :]  # (B, 1, 1, T)",
        "return torch.tensor([[t != pad_idx for t in row] for row in tokens.tolist()])[:, None, None, :]",
        "for row in tokens.tolist()"),
    "attention_weights_copied_to_the_cpu": _device(
        "scaled_dot_product_attention", "sdpa_stays_on_the_inputs_device", ATT,
        "weights = scores.softmax(dim=-1)  # (..., T_q, T_k)",
        "weights = scores.softmax(dim=-1).cpu()  # (..., T_q, T_k)", "weights = scores.softmax(dim=-1).cpu()"),
    # the output buffer made on the CPU: on a GPU the decoded tokens come back on the CPU
    "greedy_output_buffer_made_on_the_cpu": _device(
        "greedy_decode", "greedy_decode_stays_on_the_inputs_device", "assignment4/decoding.py",
        "ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long, device=src.device)",
        "ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long)",
        "ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long)"),
}

# Correct ways to place tensors: each must keep every point.
DEVICE_VARIANTS = {
    "causal_mask_built_on_the_tokens_device_in_forward": {TRANSFORMER: [(
        "tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
        "T = tgt.size(1)\n        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()\n"
        "        tgt_mask = make_pad_mask(tgt, self.pad_idx) & causal")]},
    "causal_mask_from_ones_like": {MASKS: [(
        "causal = make_causal_mask(tgt.size(1), device=tgt.device)  # (1, 1, T, T)",
        "causal = torch.ones_like(tgt[:1, None, :, None] == tgt[:1, None, None, :]).tril()  # (1, 1, T, T)")]},
    "scale_as_a_0_dim_cpu_tensor_and_neg_inf_masking": {ATT: EINSUM_NEG_INF + [(
        "* d_k ** -0.5", "/ torch.tensor(d_k).sqrt()")]},
    "scale_kept_in_a_buffer": {EMB: [
        ("        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)\n",
         "        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)\n"
         "        self.register_buffer(\"scale\", torch.tensor([math.sqrt(d_model)]), persistent=False)\n"),
        ("return self.embedding(x) * math.sqrt(self.d_model)", "return self.embedding(x) * self.scale")]},
}

# Right on the CPU and on the meta device, wrong in half precision: float16 holds nothing below -65504
HALF_PRECISION_BUGS = {"attention_masks_with_minus_1e9": _one(
    "scaled_dot_product_attention", ATT, "masked_fill(~mask, torch.finfo(scores.dtype).min)",
    "masked_fill(~mask, -1e9)")}


# Bugs that once lost nothing, by class (issue 36): each case must cost its own component and
# nothing elsewhere (tests/kit/sandbox/test_survivors.py). Several cases per class, written differently.
EMB_TOKEN = "self.token = TokenEmbedding(vocab_size, d_model, padding_idx)"
TRAIN_APPEND = "        losses.append(loss.item())\n    return sum(losses) / max(len(losses), 1)"
SURVIVORS: dict[str, dict[str, Bug]] = {
    # a composite that builds a part with other arguments than the contract says: every other check of
    # the composite loads weights over the student's before measuring, so only a check of the module
    # as built sees it
    "a setting not passed on to a part": {
        "transformer_embedding_drops_padding_idx": _one(
            "TransformerEmbedding", EMB, EMB_TOKEN, "self.token = TokenEmbedding(vocab_size, d_model)"),
        "transformer_embedding_pads_token_0": _one(
            "TransformerEmbedding", EMB, EMB_TOKEN, "self.token = TokenEmbedding(vocab_size, d_model, 0)"),
        "transformer_embeds_without_pad_idx": Bug("Transformer", {TRANSFORMER: [
            (f"{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
             f"{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout)") for s in ("src", "tgt")]}),
        "transformer_embeds_with_padding_idx_0": Bug("Transformer", {TRANSFORMER: [
            (f"{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
             f"{s}_embed = TransformerEmbedding({s}_vocab_size, d_model, max_len, dropout, padding_idx=0)")
            for s in ("src", "tgt")]}),
    },
    # a count over the wrong unit: sentences a token occurs in, not its occurrences
    "a count over the wrong unit": {
        "vocab_counts_sentences_with_set": _one(
            "Vocab", DATA, "Counter(tok for seq in sequences for tok in seq)",
            "Counter(tok for seq in sequences for tok in set(seq))"),
        "vocab_counts_sentences_with_dict_fromkeys": _one(
            "Vocab", DATA, "Counter(tok for seq in sequences for tok in seq)",
            "Counter(tok for seq in sequences for tok in dict.fromkeys(seq))"),
        "vocab_counts_sentences_in_a_loop": _one(
            "Vocab", DATA, "counts = Counter(tok for seq in sequences for tok in seq)\n",
            "counts = Counter()\n        for seq in sequences:\n            counts.update(set(seq))\n"),
    },
    # an average weighted by the wrong count
    "an average weighted by the wrong count": {
        "train_epoch_mean_weighted_by_sentences": _one(
            "train_epoch", TRAINING, TRAIN_APPEND,
            "        losses += [loss.item()] * src.size(0)\n    return sum(losses) / max(len(losses), 1)"),
        "train_epoch_mean_weighted_by_target_positions": _one(
            "train_epoch", TRAINING, TRAIN_APPEND,
            "        losses += [loss.item()] * tgt_out.numel()\n    return sum(losses) / max(len(losses), 1)"),
        "train_epoch_mean_weighted_by_non_pad_tokens": _one(
            "train_epoch", TRAINING, TRAIN_APPEND,
            "        losses += [loss.item()] * int((tgt_out != 0).sum())\n"
            "    return sum(losses) / max(len(losses), 1)"),
        "label_smoothing_divides_by_all_positions": _one(
            "LabelSmoothingLoss", TRAINING, "return (per_token * keep).sum() / keep.sum().clamp(min=1)",
            "return (per_token * keep).sum() / keep.numel()"),
        "label_smoothing_counts_the_padding": BUGS["label_smoothing_counts_the_padding"],
    },
}

# Correct solutions that the contract allows and the checks once refused: each must keep every point
# in the assignment named (the first of each pair: the component's own; a non-persistent pe is also
# graded in the Transformer, whose checks load whole state dicts).
NON_PERSISTENT_PE = {PE: [('self.register_buffer("pe", pe)', 'self.register_buffer("pe", pe, persistent=False)')]}
NOAM = "return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)"
ACCEPTED_VARIANTS: dict[str, tuple[str, dict[str, list[tuple[str, str]]]]] = {
    "noam_lr_returns_a_numpy_float": ("assignment4", {TRAINING: [(
        NOAM, "import numpy as np\n\n    return np.float64(d_model) ** -0.5 * np.minimum(np.power(float(step), -0.5), "
              "step * np.power(float(warmup), -1.5))")]}),
    "noam_lr_returns_a_float_subclass": ("assignment4", {TRAINING: [(
        NOAM, "class Rate(float):\n        pass\n\n    return Rate(d_model ** -0.5 * min(step ** -0.5, "
              "step * warmup ** -1.5))")]}),
    "train_epoch_returns_a_numpy_float": ("assignment4", {TRAINING: [(
        "return sum(losses) / max(len(losses), 1)", "import numpy as np\n\n    return np.mean(losses)")]}),
    "pe_buffer_not_persistent": ("assignment1", NON_PERSISTENT_PE),
    "pe_buffer_not_persistent_in_a_transformer": ("assignment3", NON_PERSISTENT_PE),
}


# Correct data pipelines written another way (issue 51): the contract numbers the words after the
# specials in any order, and collate may pad however it likes. Each must keep every point of
# assignment4, its end-to-end training included (tests/kit/sandbox/test_boundary_verdicts.py): whatever the
# grader recomputes of a training run, it recomputes on the submission's own numbering of the tokens.
VOCAB_ORDER = "words.sort(key=lambda w: (-counts[w], w))  # frequent first, then alphabetical: deterministic"
COLLATE_BODY = (
    "    src = pad([s for s, _ in pairs])  # (B, S)\n"
    "    tgt_in = pad([[Vocab.SOS] + list(t) for _, t in pairs])  # (B, T)\n"
    "    tgt_out = pad([list(t) + [Vocab.EOS] for _, t in pairs])  # (B, T)\n")
PAD_SEQUENCE = (COLLATE_BODY,
                "    from torch.nn.utils.rnn import pad_sequence\n\n"
                "    def padded(rows):\n"
                "        rows = [torch.tensor(list(r), dtype=torch.long) for r in rows]\n"
                "        return pad_sequence(rows, batch_first=True, padding_value=pad_idx)\n\n"
                "    src = padded([s for s, _ in pairs])  # (B, S)\n"
                "    tgt_in = padded([[Vocab.SOS, *t] for _, t in pairs])  # (B, T)\n"
                "    tgt_out = padded([[*t, Vocab.EOS] for _, t in pairs])  # (B, T)\n")
DATA_PIPELINE_VARIANTS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "vocab_numbers_words_in_first_seen_order": {DATA: [(VOCAB_ORDER, "pass  # Counter keeps the order first seen")]},
    # two in one grading (each grading of assignment4 trains twice): the words sorted, collate by pad_sequence
    "vocab_in_sorted_order_and_collate_by_pad_sequence": {DATA: [(VOCAB_ORDER, "words.sort()"), PAD_SEQUENCE]},
}
