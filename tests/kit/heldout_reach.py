"""The held-out set's second round (issue 44): the areas the first round's diagnosis almost never named.

Assignment 4 (the training loop's order of zero_grad/backward/step/scheduler and what its loss is averaged
over, the label-smoothing mass, the schedule's exponents, the vocabulary's specials, greedy decoding's
stopping), device placement (a tensor made on the CPU where the input's device was expected),
multi-head attention's projections and heads, and the whole model's wiring (which embedding, mask or
projection goes where). Kept apart from the course's table as tests/kit/heldout.py is, whose HELDOUT
these entries join; each names its source in a comment where a thread reports it.
"""

from tests.grading.bugs import DATA, DECODING, MASKS, MHA, TRAINING, TRANSFORMER
from tests.kit.classic import Classic, _one

_ZERO = "        optimizer.zero_grad()\n        logits = model(src, tgt_in)  # (B, T, V)"
_STEP = "        optimizer.step()\n        if scheduler is not None:\n            scheduler.step()\n"
_MEAN = "return sum(losses) / max(len(losses), 1)"
_TARGETS = "loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))"
_Q = "q = torch.full_like(log_probs, self.smoothing / self.vocab_size)  # (N, V)"
_ADD = "q.scatter_add_(1, safe.unsqueeze(1), torch.full_like(log_probs[:, :1], 1.0 - self.smoothing))"
_NOAM = "return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)"
_LOOP = "while ys.size(1) < max_len and not done.all():"
_YS = "ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long, device=src.device)"
_DONE = "done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)"
_PROJ = {n: f"{n} = self.w_{n}({n}).view(B, T_{'q' if n == 'q' else 'k'}, self.n_heads, self.d_k)"
         for n in ("q", "k", "v")}

REACH: dict[str, Classic] = {
    # --- assignment4: the training loop
    # patrickloeber/pytorchTutorial #19, rll/deepul #12: where zero_grad goes in the loop
    "train_zero_grad_between_backward_and_step": Classic("train_epoch", {TRAINING: [
        (_ZERO, "        logits = model(src, tgt_in)  # (B, T, V)"),
        ("        loss.backward()\n" + _STEP, "        loss.backward()\n        optimizer.zero_grad()\n" + _STEP)]},
        "an epoch that zeroes the gradients between backward and step (no update ever happens)"),
    # zju3dv/NeuralRecon #51, XPixelGroup/BasicSR #206: "Detected call of lr_scheduler.step() before
    # optimizer.step()"
    "train_scheduler_before_the_optimizer": _one(
        "train_epoch", TRAINING, _STEP,
        "        if scheduler is not None:\n            scheduler.step()\n        optimizer.step()\n",
        "an epoch that steps the scheduler before the optimizer (the first learning rate skipped)"),
    "train_returns_the_sum_of_the_losses": _one("train_epoch", TRAINING, _MEAN, "return sum(losses)",
                                                "an epoch that returns the sum of its batch losses, not the mean"),
    "train_mean_weighted_by_sentences": Classic("train_epoch", {TRAINING: [
        ("    losses = []\n", "    losses, sizes = [], []\n"),
        ("        losses.append(loss.item())\n",
         "        losses.append(loss.item() * src.size(0))\n        sizes.append(src.size(0))\n"),
        (_MEAN, "return sum(losses) / sum(sizes)")]},
        "an epoch that averages its losses weighted by each batch's sentences"),
    # the decoder's input as the target: teacher forcing without the shift
    "train_loss_against_the_decoder_input": _one(
        "train_epoch", TRAINING, _TARGETS, "loss = loss_fn(logits.view(-1, logits.shape[-1]), tgt_in.view(-1))",
        "an epoch whose loss compares the logits with tgt_in (the unshifted target)"),
    "train_without_model_train": _one("train_epoch", TRAINING, "    model.train()\n    losses = []\n",
                                      "    losses = []\n", "an epoch that leaves the model in whatever mode it was"),
    # --- assignment4: label smoothing
    # pytorch/pytorch #7455: smoothing / (classes - 1) off the target, 1 - smoothing on it
    "smoothing_over_the_other_classes": Classic("LabelSmoothingLoss", {TRAINING: [
        (_Q, "q = torch.full_like(log_probs, self.smoothing / (self.vocab_size - 1))"),
        (_ADD, "q.scatter_(1, safe.unsqueeze(1), 1.0 - self.smoothing)")]},
        "label smoothing spread over the V - 1 other classes"),
    "smoothing_summed_not_averaged": _one("LabelSmoothingLoss", TRAINING,
                                          "return (per_token * keep).sum() / keep.sum().clamp(min=1)",
                                          "return (per_token * keep).sum()",
                                          "label smoothing summed over the tokens, not averaged"),
    "smoothing_target_keeps_its_full_mass": _one(
        "LabelSmoothingLoss", TRAINING, _ADD, "q.scatter_add_(1, safe.unsqueeze(1), torch.ones_like(log_probs[:, :1]))",
        "label smoothing that adds 1, not 1 - smoothing, on the target (q sums to 1 + smoothing)"),
    # --- assignment4: the schedule's exponents
    "noam_d_model_exponent_positive": _one(
        "noam_lr", TRAINING, _NOAM, "return d_model ** 0.5 * min(step ** -0.5, step * warmup ** -1.5)",
        "a Noam schedule scaled by sqrt(d_model), not 1/sqrt(d_model)"),
    "noam_max_for_min": _one("noam_lr", TRAINING, _NOAM,
                             "return d_model ** -0.5 * max(step ** -0.5, step * warmup ** -1.5)",
                             "a Noam schedule with max where the formula has min"),
    "noam_warmup_exponent_minus_half": _one(
        "noam_lr", TRAINING, _NOAM, "return (d_model ** -0.5) * min(step ** -0.5, step * warmup ** -0.5)",
        "a Noam schedule whose warm-up slope is warmup^-0.5, not warmup^-1.5"),
    # --- assignment4: the vocabulary
    # fairseq's order: <s>, <pad>, </s>, <unk>
    "vocab_fairseq_special_order": _one(
        "Vocab", DATA, 'specials = ["<pad>", "<sos>", "<eos>", "<unk>"]',
        'specials = ["<sos>", "<pad>", "<eos>", "<unk>"]',
        "a vocabulary with fairseq's order of specials (<sos> first)"),
    "vocab_counts_sentences": _one("Vocab", DATA, "Counter(tok for seq in sequences for tok in seq)",
                                   "Counter(tok for seq in sequences for tok in set(seq))",
                                   "a vocabulary that counts the sentences a token occurs in"),
    # --- assignment4: greedy decoding
    # joeynmt/joeynmt #45: a batch is finished when every row is
    "greedy_stops_when_any_row_ends": _one("greedy_decode", DECODING, _LOOP,
                                           "while ys.size(1) < max_len and not done.any():",
                                           "greedy decoding that stops when the first row emits <eos>"),
    # DongjunLee/transformer-tensorflow #5: the loop runs to max_len whatever was emitted
    "greedy_never_stops_early": _one("greedy_decode", DECODING, _LOOP, "while ys.size(1) < max_len:",
                                     "greedy decoding that always runs to max_len"),
    "greedy_sos_not_counted": _one("greedy_decode", DECODING, _LOOP,
                                   "while ys.size(1) - 1 < max_len and not done.all():",
                                   "greedy decoding that does not count <sos> toward max_len"),
    "greedy_without_eval": _one("greedy_decode", DECODING, "    model.eval()\n    with torch.no_grad():",
                                "    with torch.no_grad():", "greedy decoding with dropout left on"),
    # --- device placement: a tensor made on the CPU whatever the input's device
    # rohitg00/ai-engineering-from-scratch #47: torch.full's device defaults to the CPU
    "greedy_start_column_on_the_cpu": _one("greedy_decode", DECODING, _YS,
                                           "ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long)",
                                           "greedy decoding whose <sos> column is made on the CPU"),
    "greedy_finished_flags_on_the_cpu": _one("greedy_decode", DECODING, _DONE,
                                             "done = torch.zeros(src.size(0)).bool()",
                                             "greedy decoding whose finished flags are made on the CPU"),
    "smoothing_target_distribution_on_the_cpu": _one(
        "LabelSmoothingLoss", TRAINING, _Q, "q = torch.full(log_probs.shape, self.smoothing / self.vocab_size)",
        "label smoothing whose target distribution is made on the CPU"),
    # SamLynnEvans/Transformer #27 and #30: trg_mask & np_mask, the causal part on the CPU
    "tgt_mask_causal_part_on_the_cpu": _one("make_tgt_mask", MASKS,
                                            "make_causal_mask(tgt.size(1), device=tgt.device)",
                                            "make_causal_mask(tgt.size(1))",
                                            "a target mask whose causal part is made on the CPU"),
    # pytorch/text #1977: the decoder's mask built on the CPU inside the model
    "transformer_builds_the_causal_mask_on_the_cpu": _one(
        "Transformer", TRANSFORMER, "tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
        "tgt_mask = make_pad_mask(tgt, self.pad_idx) & torch.tril(torch.ones(tgt.size(1), tgt.size(1)).bool())",
        "a Transformer that builds its causal mask on the CPU"),
    # --- multi-head attention: projections and heads
    # OpenNMT/OpenNMT-py #1130: keys and values projected from the query (self-attention only)
    "mha_keys_and_values_from_the_query": Classic("MultiHeadAttention", {MHA: [
        ("        B, T_q, _ = q.shape\n", "        B, T_q, _ = q.shape\n        query = q\n"),
        (_PROJ["k"], "k = self.w_k(query).view(B, -1, self.n_heads, self.d_k)"),
        (_PROJ["v"], "v = self.w_v(query).view(B, -1, self.n_heads, self.d_k)")]},
        "multi-head attention that projects its keys and values from the query"),
    "mha_query_not_projected": _one("MultiHeadAttention", MHA, _PROJ["q"],
                                    "q = q.view(B, T_q, self.n_heads, self.d_k)",
                                    "multi-head attention that never applies w_q"),
    # the Annotated Transformer's clones() written as [nn.Linear(...)] * 4: one module shared
    "mha_one_linear_for_q_k_v": Classic("MultiHeadAttention", {MHA: [
        ("        self.w_q = nn.Linear(d_model, d_model)\n        self.w_k = nn.Linear(d_model, d_model)\n"
         "        self.w_v = nn.Linear(d_model, d_model)\n",
         "        self.w_q = self.w_k = self.w_v = nn.Linear(d_model, d_model)\n")]},
        "multi-head attention whose q, k and v projections are one shared module"),
    # nn.MultiheadAttention's average_attn_weights=True carried over
    "mha_weights_averaged_over_heads": _one("MultiHeadAttention", MHA, "self.attention_weights = weights\n",
                                            "self.attention_weights = weights.mean(dim=1)\n",
                                            "multi-head attention that keeps the weights averaged over the heads"),
    "mha_merge_without_transpose_written_with_view": _one(
        "MultiHeadAttention", MHA, "out.transpose(1, 2).contiguous().view(B, T_q, self.d_model)",
        "out.contiguous().view(B, -1, self.d_model)", "heads merged with view, without transposing back"),
    # --- the whole model's wiring
    # the Annotated Transformer's EncoderDecoder.forward returns the decoder's output (its Generator is
    # applied in the loss)
    "transformer_forward_without_the_projection": _one(
        "Transformer", TRANSFORMER, "return self.projection(self.decode(memory, src_mask, tgt, tgt_mask))",
        "return self.decode(memory, src_mask, tgt, tgt_mask)",
        "a Transformer whose forward returns the decoder's output, not the logits"),
    "transformer_projection_sized_by_the_source_vocab": _one(
        "Transformer", TRANSFORMER, "self.projection = nn.Linear(d_model, tgt_vocab_size)",
        "self.projection = nn.Linear(d_model, src_vocab_size)", "a projection onto the source vocabulary"),
    "transformer_encodes_with_the_target_embedding": _one(
        "Transformer", TRANSFORMER, "return self.encoder(self.src_embed(src), src_mask)",
        "return self.encoder(self.tgt_embed(src), src_mask)", "a Transformer that embeds the source with tgt_embed"),
    "transformer_one_embedding_for_both": _one(
        "Transformer", TRANSFORMER,
        "self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)",
        "self.tgt_embed = self.src_embed", "a Transformer whose target embedding is the source embedding"),
    "transformer_target_mask_without_padding": Classic("Transformer", {TRANSFORMER: [
        ("import make_pad_mask, make_tgt_mask", "import make_causal_mask, make_pad_mask, make_tgt_mask"),
        ("tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)",
         "tgt_mask = make_causal_mask(tgt.size(1), tgt.device)")]},
        "a Transformer whose target mask is causal only"),
}
