"""A corpus run's data: the pairs read, split, tokenized and cut to length; then the order of the batches.

Everything here is fixed by the corpus, the run's settings and its seed, so that a resumed run
rebuilds exactly the batches the interrupted one would have taken.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from grader.translation.corpus import CorpusError, default_held_out, fingerprint, read_pairs, split_held_out
from grader.translation.tokenizing import Tokenizer, train_tokenizers

TokenPair = tuple[list[str], list[str]]
# batches are drawn from pools of this many batches sorted by length: little padding, still random
POOL_BATCHES = 50


@dataclass
class Data:
    """The training pairs and the held-out pairs, as tokens, and the tokenizers that made them."""

    train: list[TokenPair]
    held_out: list[TokenPair]
    held_out_text: list[tuple[str, str]]  # the held-out pairs as read (what a translation is scored against)
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    n_pairs: int                          # pairs read
    too_long: int                         # pairs left out (either split): more than max_tokens tokens a side
    digest: str                           # corpus.fingerprint of the pairs read


def prepare(spec, tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> Data:
    """Read, split and tokenize `spec`'s corpus (a checkpoint.RunSpec). `tokenizers`: those of the run
    being resumed; else they are made (BPE ones learnt from the training split)."""
    pairs = read_pairs(spec.corpus)
    if len(pairs) < 2:
        raise CorpusError(f"{spec.corpus.path}: 1 sentence pair; at least 2 are needed (one to train on, "
                          "one held out to score)")
    held = spec.held_out if spec.held_out is not None else default_held_out(len(pairs))
    train_text, held_text = split_held_out(pairs, held, spec.seed)
    src_tok, tgt_tok = tokenizers or train_tokenizers(spec.tokenizer, train_text, spec.bpe_vocab)

    def fits(pair: TokenPair) -> bool:
        return 0 < len(pair[0]) <= spec.max_tokens and 0 < len(pair[1]) <= spec.max_tokens

    train = [p for p in ((src_tok.split(s), tgt_tok.split(t)) for s, t in train_text) if fits(p)]
    held_pairs = [(p, text) for p, text in (((src_tok.split(s), tgt_tok.split(t)), (s, t)) for s, t in held_text)
                  if fits(p)]
    if not train or not held_pairs:
        raise CorpusError(f"{spec.corpus.path}: no {'training' if not train else 'held-out'} pair has 1 to "
                          f"{spec.max_tokens} tokens on both sides (raise --max-tokens)")
    return Data(train=train, held_out=[p for p, _ in held_pairs], held_out_text=[t for _, t in held_pairs],
                src_tokenizer=src_tok, tgt_tokenizer=tgt_tok, n_pairs=len(pairs),
                too_long=len(train_text) - len(train) + len(held_text) - len(held_pairs), digest=fingerprint(pairs))


class BatchOrder:
    """Which pairs make the batch of each step (counted from 0): epoch e is a permutation drawn by
    random.Random(seed * 1_000_003 + e), cut into pools of POOL_BATCHES batches, each pool sorted by
    length and cut into batches, the epoch's batches shuffled. A function of (seed, step) alone."""

    def __init__(self, lengths: list[int], batch_size: int, seed: int):
        self.lengths, self.seed = lengths, seed
        self.batch_size = min(batch_size, len(lengths))
        self.per_epoch = len(lengths) // self.batch_size  # the last incomplete batch of an epoch is dropped
        self._epoch: tuple[int, list[list[int]]] = (-1, [])

    def batch(self, step: int) -> list[int]:
        epoch, i = divmod(step, self.per_epoch)
        if self._epoch[0] != epoch:
            self._epoch = (epoch, self._batches(epoch))
        return self._epoch[1][i]

    def _batches(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        order = order[:self.per_epoch * self.batch_size]
        pool = POOL_BATCHES * self.batch_size
        batches = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start:start + pool], key=lambda j: self.lengths[j])
            batches += [chunk[k:k + self.batch_size] for k in range(0, len(chunk), self.batch_size)]
        rng.shuffle(batches)
        return batches
