"""Beam search: the `beam_size` most probable translations of one sentence, each with its score.

Not greedy decoding by another name: it takes one sentence (a list of source ids, not a batch),
returns a ranked list of `Hypothesis` (ids without <sos>, the model's log-probability of them, the
score it was ranked by), and runs the model only through what the Transformer's contract gives
(model.encode, model.decode, model.projection, model.pad_idx). The student's
assignment4.decoding.greedy_decode, batched and returning a padded tensor, is graded on its own;
this module is the kit's, for `grade translate --beam`, and is not in the grading sandbox.

At each step every live hypothesis is extended by every token; the best 2 * beam_size extensions are
read in order, those ending in <eos> among the first beam_size set aside as finished, the first
beam_size others kept. With a
length penalty alpha the finished are ranked by log P / ((5 + length) / 6) ** alpha (Wu et al., 2016);
alpha 0 ranks by log P. The search stops when beam_size hypotheses have finished, or, with alpha 0,
as soon as no live hypothesis can still beat the best finished one (log P only falls as a
hypothesis grows), or at max_len. The greedy path is always among the candidates: a plain beam can
drop it on the way and end on something less probable (Stahlberg and Byrne, 2019, on beam search's
search errors), and a beam should never do worse than greedy decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Hypothesis:
    """One translation: `ids` without <sos> (ending with <eos> when it finished before max_len)."""

    ids: tuple[int, ...]
    log_prob: float        # sum of the model's log-probabilities of the ids, each given those before it
    score: float           # what the beam ranks by: log_prob over the length penalty


@dataclass(frozen=True)
class BeamOptions:
    """`max_len` counts <sos>, as greedy_decode's does: at most max_len - 1 ids are produced."""

    beam_size: int = 4
    length_penalty: float = 0.0
    max_len: int = 52
    sos: int = 1
    eos: int = 2

    def __post_init__(self):
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {self.beam_size}")
        if self.length_penalty < 0:
            raise ValueError(f"length_penalty must be at least 0, got {self.length_penalty}")
        if self.max_len < 2:
            raise ValueError(f"max_len must be at least 2 (<sos> and one token), got {self.max_len}")


def _penalty(length: int, alpha: float) -> float:
    return ((5 + length) / 6) ** alpha


def _log_probs(model, memory, src_mask, prefixes: list[list[int]]) -> torch.Tensor:
    """(K, V) log-probabilities of the next token after each prefix (all of one length)."""
    ys = torch.tensor(prefixes, dtype=torch.long, device=memory.device)  # (K, t)
    t = ys.size(1)
    causal = torch.ones(t, t, dtype=torch.bool, device=ys.device).tril()  # (t, t)
    tgt_mask = (ys != model.pad_idx)[:, None, None, :] & causal  # (K, 1, t, t)
    k = ys.size(0)
    out = model.decode(memory.expand(k, -1, -1), src_mask.expand(k, -1, -1, -1), ys, tgt_mask)  # (K, t, d_model)
    return torch.log_softmax(model.projection(out[:, -1]).float(), dim=-1)  # (K, V)


def _search(model, memory, src_mask, beam: int, o: BeamOptions) -> list[Hypothesis]:
    live: list[tuple[list[int], float]] = [([o.sos], 0.0)]
    finished: list[Hypothesis] = []
    while live and len(live[0][0]) < o.max_len:
        logp = _log_probs(model, memory, src_mask, [p for p, _ in live])  # (K, V)
        totals = torch.tensor([s for _, s in live], device=logp.device)[:, None] + logp  # (K, V)
        top = totals.flatten().topk(min(2 * beam, totals.numel()))
        kept: list[tuple[list[int], float]] = []
        for rank, (value, index) in enumerate(zip(top.values.tolist(), top.indices.tolist(), strict=True)):
            row, token = divmod(index, logp.size(1))
            ids = [*live[row][0], token]
            if token == o.eos:
                if rank < beam:  # an <eos> the beam would not have kept does not finish
                    score = value / _penalty(len(ids) - 1, o.length_penalty)
                    finished.append(Hypothesis(tuple(ids[1:]), value, score))
            elif len(kept) < beam:
                kept.append((ids, value))
        live = kept
        best = max((h.score for h in finished), default=None)
        if len(finished) >= beam or (o.length_penalty == 0 and best is not None and live
                                     and best >= max(s for _, s in live)):
            break
    # what is still live at max_len ends there, unfinished, as greedy_decode's rows do
    finished += [Hypothesis(tuple(p[1:]), s, s / _penalty(len(p) - 1, o.length_penalty)) for p, s in live
                 if len(p) >= o.max_len]
    return finished


def beam_search(model, src_ids: list[int], options: BeamOptions = BeamOptions()) -> list[Hypothesis]:
    """The best `options.beam_size` hypotheses for the source sentence `src_ids` (no specials), best first.

    The model runs in eval mode under torch.no_grad(), on the device of its parameters."""
    if not src_ids:
        raise ValueError("src_ids: an empty sentence")
    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        src = torch.tensor([list(src_ids)], dtype=torch.long, device=device)  # (1, S)
        src_mask = (src != model.pad_idx)[:, None, None, :]  # (1, 1, 1, S)
        memory = model.encode(src, src_mask)  # (1, S, d_model)
        found = _search(model, memory, src_mask, options.beam_size, options)
        if options.beam_size > 1:
            found += _search(model, memory, src_mask, 1, options)  # the greedy path
    unique: dict[tuple[int, ...], Hypothesis] = {}
    for h in sorted(found, key=lambda h: -h.score):
        unique.setdefault(h.ids, h)
    return list(unique.values())[:options.beam_size]
