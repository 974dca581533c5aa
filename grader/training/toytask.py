"""The kit's bundled translation task: human-readable dates -> ISO dates, word-level.

    "the 3rd of march 1994"   -> "1 9 9 4 - 0 3 - 0 3"
    "march 3 , 1994"          -> "1 9 9 4 - 0 3 - 0 3"
    "3 mar 1994"              -> "1 9 9 4 - 0 3 - 0 3"

Small enough to train on a laptop CPU in about a minute, and it needs what a
Transformer has: the output is reordered (year first, day last), every part goes
through a lexical mapping (a year word to four digits, "march"/"mar" to "0 3",
"3rd"/"3" to "0 3"), and source and target have vocabularies of their own (a
source word is a whole number, "1994"; a target token is one character), so
copying the input gets nothing right.

Generated in memory from a seed, no downloads. The splits are disjoint by
calendar date (a test date never appears in training, in any wording), so the
test measures composition, not recall. Only the standard library is used here,
so a sandboxed grading process needs nothing but this package and a tree.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

MONTHS = ["january", "february", "march", "april", "may", "june", "july",
          "august", "september", "october", "november", "december"]
MONTHS_SHORT = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
FIRST_YEAR, LAST_YEAR = 1950, 2029

# One wording per entry; each maps a date to a list of source words.
FORMATS = {
    "the {ord} of {month} {year}": lambda d: ["the", _ordinal(d.day), "of", MONTHS[d.month - 1], str(d.year)],
    "{month} {day} , {year}": lambda d: [MONTHS[d.month - 1], str(d.day), ",", str(d.year)],
    "{day} {mon} {year}": lambda d: [str(d.day), MONTHS_SHORT[d.month - 1], str(d.year)],
    "{ord} {month} {year}": lambda d: [_ordinal(d.day), MONTHS[d.month - 1], str(d.year)],
    "{mon} the {ord} , {year}": lambda d: [MONTHS_SHORT[d.month - 1], "the", _ordinal(d.day), ",", str(d.year)],
}

Pair = tuple[list[str], list[str]]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def iso_tokens(date: datetime.date) -> list[str]:
    """The target: "1994-03-03" as one token per character."""
    return list(date.isoformat())


def render(date: datetime.date, fmt: str) -> list[str]:
    """The source: `date` in the wording `fmt` (a key of FORMATS)."""
    return FORMATS[fmt](date)


@dataclass
class Task:
    """Three disjoint splits of (src_tokens, tgt_tokens) pairs, lists of str."""

    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]


def make_task(seed: int = 0, n_train: int = 12000, n_valid: int = 500, n_test: int = 1000) -> Task:
    """Draw the splits; the same seed gives the same pairs in the same order.

    Each pair is one calendar date between 1950-01-01 and 2029-12-31 in one of the
    FORMATS wordings. Dates are drawn without replacement and each date goes to one
    split only (with its wording drawn at random), so no source sentence and no
    date is shared between train, valid and test.
    """
    start = datetime.date(FIRST_YEAR, 1, 1)
    n_days = (datetime.date(LAST_YEAR, 12, 31) - start).days + 1
    total = n_train + n_valid + n_test
    if total > n_days:
        raise ValueError(f"n_train + n_valid + n_test = {total} exceeds the {n_days} distinct dates")
    rng = random.Random(seed)
    offsets = rng.sample(range(n_days), total)
    fmts = list(FORMATS)
    pairs = []
    for off in offsets:
        date = start + datetime.timedelta(days=off)
        pairs.append((render(date, rng.choice(fmts)), iso_tokens(date)))
    return Task(train=pairs[:n_train], valid=pairs[n_train:n_train + n_valid],
                test=pairs[n_train + n_valid:])


# ---- helpers that use a tree's own assignment4 Vocab / collate ----------------------

def build_vocabs(task: Task, Vocab):
    """(src_vocab, tgt_vocab) built with the given Vocab class from the training split only."""
    return Vocab([s for s, _ in task.train]), Vocab([t for _, t in task.train])


def distinct_tokens(task: Task) -> tuple[list[str], list[str]]:
    """The distinct source and target tokens of the training and test splits, each sorted: what a
    numbering of the tokens is asked about (grader.suite.trained: the grader encodes with the run's own)."""
    pairs = task.train + task.test
    return sorted({w for s, _ in pairs for w in s}), sorted({w for _, t in pairs for w in t})


def encode_pairs(pairs: list[Pair], src_vocab, tgt_vocab) -> list[tuple[list[int], list[int]]]:
    """Token pairs -> id pairs (no specials: collate adds <sos>/<eos>)."""
    return [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in pairs]


@dataclass(frozen=True)
class BatchOrder:
    """The order iterate_batches takes pairs in.

    With shuffle, each pass over the data is a fresh permutation drawn from
    random.Random(seed), so the batch sequence is fixed by the seed. With repeat,
    passes follow each other forever (take as many as you need); the last
    incomplete batch of a pass is dropped then, so every batch is full.
    """

    seed: int = 0
    shuffle: bool = True
    repeat: bool = False


def iterate_batches(encoded, collate, batch_size: int, pad_idx: int, *, order: BatchOrder = BatchOrder()):
    """Yield (src, tgt_in, tgt_out) from the given collate, batch_size pairs at a time, in `order`."""
    rng = random.Random(order.seed)
    indices = list(range(len(encoded)))
    while True:
        if order.shuffle:
            rng.shuffle(indices)
        stop = len(indices) - (len(indices) % batch_size if order.repeat else 0)
        for i in range(0, stop, batch_size):
            yield collate([encoded[j] for j in indices[i:i + batch_size]], pad_idx)
        if not order.repeat:
            return
