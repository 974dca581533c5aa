"""A parallel corpus the user supplies, read strictly: a bad line is one error naming its file and line.

Two layouts:

- one tab-separated file, a pair a line: the layout of Tatoeba's and Anki's sentence pairs
  ("Go.<TAB>Va !<TAB>CC-BY 2.0 (France) Attribution: tatoeba.org ..."), the columns chosen,
  the others ignored;
- two aligned text files, a sentence a line, line i of one the translation of line i of the other
  (Multi30k's train.en / train.de, a corpus of OPUS in Moses format).

Text is UTF-8 (a byte-order mark at the start is allowed). Nothing is downloaded: the user gets
the files; the kit's tests make theirs.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from grader.course_table import ConfigError

Pair = tuple[str, str]


class CorpusError(ConfigError):
    """A corpus that cannot be read: the message names the file and, where one is at fault, the line."""


@dataclass(frozen=True)
class CorpusSource:
    """Where the pairs are. `target` set: two aligned files (`path` the source side); else `path` is
    tab-separated and `columns` (1-based, source then target) pick the sides. `limit`: read the first
    `limit` pairs only."""

    path: Path
    target: Path | None = None
    columns: tuple[int, int] = (1, 2)
    limit: int | None = None

    def __post_init__(self):
        if min(self.columns) < 1 or self.columns[0] == self.columns[1]:
            raise ConfigError(f"columns: two different columns counted from 1, got {self.columns}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit: at least 1 pair, got {self.limit}")

    def to_json(self) -> dict:
        return {"path": str(self.path), "target": None if self.target is None else str(self.target),
                "columns": list(self.columns), "limit": self.limit}

    @classmethod
    def from_json(cls, data: dict) -> CorpusSource:
        return cls(path=Path(data["path"]), target=None if data["target"] is None else Path(data["target"]),
                   columns=(int(data["columns"][0]), int(data["columns"][1])), limit=data["limit"])


def read_pairs(source: CorpusSource) -> list[Pair]:
    """Every (source sentence, target sentence) of the corpus, in file order, stripped of outer spaces.

    Raises CorpusError on a missing or unreadable file, a line that is not UTF-8, a line with too
    few columns, an empty sentence, files of different lengths, or no pair at all."""
    pairs = []
    rows = _aligned(source.path, source.target) if source.target else _tabbed(source.path, source.columns)
    for pair in rows:
        pairs.append(pair)
        if source.limit is not None and len(pairs) >= source.limit:
            break
    if not pairs:
        raise CorpusError(f"{source.path}: no sentence pairs in it (an empty corpus)")
    return pairs


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without its line ending) of a UTF-8 file."""
    if not path.exists():
        raise CorpusError(f"{path}: no such file")
    if not path.is_file():
        raise CorpusError(f"{path}: not a file")
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise CorpusError(f"{path}:{number}: not UTF-8 text (byte {exc.start + 1} of the line: "
                                      f"{raw[exc.start:exc.start + 1]!r}); save the file as UTF-8") from None
                if number == 1:
                    text = text.removeprefix("\ufeff")
                yield number, text.rstrip("\r\n")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _sentence(text: str, path: Path, number: int, side: str) -> str:
    text = text.strip()
    if not text:
        raise CorpusError(f"{path}:{number}: the {side} sentence is empty")
    return text


def _tabbed(path: Path, columns: tuple[int, int]) -> Iterator[Pair]:
    need = max(columns)
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) < need:
            raise CorpusError(f"{path}:{number}: {len(fields)} tab-separated field(s), expected at least {need} "
                              f"(source in column {columns[0]}, target in column {columns[1]})")
        yield (_sentence(fields[columns[0] - 1], path, number, "source"),
               _sentence(fields[columns[1] - 1], path, number, "target"))


def _aligned(src: Path, tgt: Path) -> Iterator[Pair]:
    last = 0
    for a, b in zip_longest(_lines(src), _lines(tgt)):
        if a is None or b is None:
            short, long_ = (src, tgt) if a is None else (tgt, src)
            raise CorpusError(f"{short}:{last + 1}: the file ends after {last} line(s), but {long_} goes on "
                              "(the two files must have a sentence a line, aligned)")
        last = a[0]
        yield _sentence(a[1], src, a[0], "source"), _sentence(b[1], tgt, b[0], "target")


def fingerprint(pairs: list[Pair]) -> str:
    """A digest of the pairs, so that a resumed run can tell it is reading the same corpus."""
    digest = hashlib.sha256()
    for s, t in pairs:
        digest.update(s.encode() + b"\t" + t.encode() + b"\n")
    return digest.hexdigest()


def default_held_out(n_pairs: int) -> int:
    """A tenth of the corpus, at most 1000 pairs, at least 1."""
    return max(1, min(1000, n_pairs // 10))


def split_held_out(pairs: list[Pair], held_out: int, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(training pairs, held-out pairs): `held_out` pairs drawn by random.Random(seed), each side in file
    order. The same corpus and seed give the same split."""
    if not 1 <= held_out < len(pairs):
        raise ConfigError(f"--held-out: {held_out} of {len(pairs)} pairs leaves no pairs to "
                          f"{'train on' if held_out >= len(pairs) else 'score'}: give 1 to {len(pairs) - 1}")
    chosen = set(random.Random(seed).sample(range(len(pairs)), held_out))
    train = [p for i, p in enumerate(pairs) if i not in chosen]
    return train, [p for i, p in enumerate(pairs) if i in chosen]
