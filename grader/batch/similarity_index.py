"""Which pairs of a class can be listed by grader.batch.similarity, found through an inverted index
of the submissions' fingerprints (MOSS's way) instead of by comparing every pair.

Each submission's winnowed fingerprints (a hash at a position of its filtered code, per file) go
into an index, fingerprint -> the submissions that have it. A pair that shares no fingerprint shares
no code and is never listed; the index alone names the pairs that share some.

The pairs it names are then bounded, not all measured. The proof that no listed pair is lost: a pair
is listed only where the code one side x shares is at least `threshold` of x's code, `share_x >=
threshold * total_x` (rounded to three places, hence SLACK). The code x shares with y is the union of
the K-token stretches at S, x's positions whose fingerprint y has. For any set A of x's positions, a
union only grows with what is added to it:

    share_x = cover(S) <= cover(A | S) = cover(A) + what S's stretches cover beyond A's

A is x's positions of the most common fingerprints (the lines the contract dictates, which every
honest pair shares), as many as keep cover(A) under ASSUMED of what the threshold needs; its
fingerprints are never looked up. What the other positions' stretches add beyond A is summed for
every y at once from their posting lists (`_Index.upper`: exact, overlapping stretches counted
once), so the work per submission is the posting lists of its rarer fingerprints (about 8 entries per
classmate in a generated class, still a share of the class), not the class times its positions (about
300 per classmate). A pair whose bound is below the threshold cannot be listed; the few left (a handful per
submission in a generated class: what an honest pair lacks of A is little) are measured exactly,
position by position (`_cover`: what copydetect's slices add up to), and what passes is compared by
copydetect as before (the caller's grader.batch.similarity.score): the pairs listed are the
all-pairs comparison's. tests/kit/sandbox/test_similarity_index.py checks that equality, and the bound
itself, on generated classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

K = 25  # copydetect's k: tokens covered from a fingerprint's position (grader.batch.similarity.K)
SLACK = 0.001  # a share rounded to three places to reach the threshold is at least this below it
FILE_GAP = 1 << 40  # positions of two files never merge into one stretch
ASSUMED = 0.8  # A's cover: at most this share of what the threshold needs (_assumed)
PREFIXES = 33  # how many prefixes of the positions, most common first, _assumed weighs for A


@dataclass
class Prints:
    """A submission's fingerprints in compact form: per file its winnowed (hash, position) arrays and
    token coverage (copydetect's), the boilerplate left out."""

    files: dict[str, tuple[np.ndarray, np.ndarray, float]]

    @property
    def total(self) -> float:
        return sum(cov for _, _, cov in self.files.values())


def candidates(prints: list[Prints], *, threshold: float, min_match: float,
               progress: Callable[[int], None] | None = None) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, of `prints` whose exact shared share reaches `threshold` on either side
    (less SLACK) and whose first side shares at least `min_match` tokens: a superset of the pairs the
    all-pairs comparison lists, and, in practice, little more. `progress(k)`: k more submissions done."""
    bound = threshold - SLACK
    index = _Index(prints, bound)
    found: set[tuple[int, int]] = set()
    for s in range(len(prints)):
        for b in index.passing(s, min_match):
            found.add((min(s, b), max(s, b)))
        if progress is not None:
            progress(1)
    return sorted(found)


class _Index:
    """Every submission's positions (sorted, files apart) with the id of the key (file, hash) at each;
    who has each key shared by two or more, as posting lists (`holders`, sliced by `first`); and each
    submission's keys, sorted (`keys`, sliced by `key_first`)."""

    def __init__(self, prints: list[Prints], bound: float):
        self.n = len(prints)
        self.bound = bound  # the share of a submission's code a pair must reach (the threshold less SLACK)
        names = sorted({name for p in prints for name in p.files})
        owner, keys, self.pos, self.kid = [], [], [], []
        hashes_of = {name: [p.files[name][0] for p in prints if name in p.files] for name in names}
        # a key id per (file, hash): np.unique over each file's hashes, ids of two files apart
        ids, start = {}, 0
        for name in names:
            every = np.concatenate(hashes_of[name]) if hashes_of[name] else np.empty(0, np.int64)
            uniq = np.unique(every)
            ids[name] = (uniq, start)
            start += len(uniq)
        for s, p in enumerate(prints):
            pos, kid = [], []
            for f, name in enumerate(names):
                if name not in p.files:
                    continue
                hashes, idx, _ = p.files[name]
                uniq, offset = ids[name]
                pos.append(idx.astype(np.int64) + f * FILE_GAP)
                kid.append(np.searchsorted(uniq, hashes) + offset)
            pos_s = np.concatenate(pos) if pos else np.empty(0, np.int64)
            kid_s = np.concatenate(kid) if kid else np.empty(0, np.int64)
            order = np.argsort(pos_s, kind="stable")
            self.pos.append(pos_s[order])
            self.kid.append(kid_s[order])
            u = np.unique(kid_s)
            keys.append(u)
            owner.append(np.full(len(u), s, dtype=np.int32))
        self.total = np.array([p.total for p in prints])
        self.nkeys = start
        self.key_first = np.zeros(self.n + 1, dtype=np.int64)  # each submission's keys, sorted, one after another
        np.cumsum([len(u) for u in keys], out=self.key_first[1:])
        every_key = self.keys = np.concatenate(keys) if keys else np.empty(0, np.int64)
        every_owner = np.concatenate(owner) if owner else np.empty(0, np.int32)
        self.df = np.bincount(every_key, minlength=start)  # how many submissions have each key
        shared = self.df[every_key] > 1  # a key of one submission names no pair
        order = np.argsort(every_key[shared], kind="stable")
        self.holders = every_owner[shared][order]
        self.first = np.zeros(start + 1, dtype=np.int64)
        np.cumsum(np.bincount(every_key[shared], minlength=start), out=self.first[1:])

    def passing(self, s: int, min_match: float) -> np.ndarray:
        """The submissions b whose shared code is at least `bound` of s's code, measured exactly on s's
        side (and, where s comes first, at least `min_match` tokens)."""
        pos, kid, total = self.pos[s], self.kid[s], self.total[s]
        if not len(pos) or total <= 0:
            return np.empty(0, np.int64)
        need = self.bound * total
        rows = np.flatnonzero(self.upper(s) >= need)
        rows = rows[rows != s]
        if not len(rows):
            return rows
        cover = _cover(self.held(rows, kid), pos)
        keep = cover >= need
        keep &= (rows < s) | (cover >= min_match - 0.5)  # where s is first, its tokens are the pair's
        return rows[keep]

    def upper(self, s: int) -> np.ndarray:
        """Per submission b, a bound on the tokens of s's code that b shares (the module's proof): the
        cover of A (s's most common positions, as many as keep it under ASSUMED of what the threshold
        needs) with the stretches of s's other positions that b has."""
        pos, kid = self.pos[s], self.kid[s]
        assumed, covered = _assumed(pos, self.df[kid], ASSUMED * self.bound * self.total[s])
        left, right = _beyond(pos, assumed)
        beyond = np.flatnonzero(right > left)
        lengths = self.first[kid[beyond] + 1] - self.first[kid[beyond]]
        b = self.holders[_slices(self.first, kid[beyond])]  # who has each, position by position
        t = np.repeat(beyond, lengths)
        # each position adds what its stretch covers past A and past b's latest stretch before it: the
        # stretches beyond A begin and end in the order of their positions, so that latest one is the
        # one reaching furthest, b's entry before it once b's entries are together (a stable sort)
        order = np.argsort(b.astype(np.uint16) if self.n <= 1 << 16 else b, kind="stable")  # uint16: a radix sort
        b, t = b[order], t[order]
        reach = np.empty(len(t), dtype=np.int64)
        reach[1:] = np.where(b[1:] == b[:-1], right[t[:-1]], left[t[1:]])
        reach[:1] = left[t[:1]]
        adds = right[t] - np.maximum(reach, left[t])
        return covered + np.bincount(b, weights=np.maximum(adds, 0), minlength=self.n)

    def held(self, rows: np.ndarray, kid: np.ndarray) -> np.ndarray:
        """(len(kid), len(rows)): whether each b of `rows` (ascending) has the key at each of s's
        positions; looked up in the keys of `rows` alone, few once upper() has ruled out the rest."""
        lengths = self.key_first[rows + 1] - self.key_first[rows]
        theirs = self.keys[_slices(self.key_first, rows)]  # sorted within each row, rows in order
        code = np.repeat(np.arange(len(rows), dtype=np.int64), lengths) * self.nkeys + theirs
        wanted = np.arange(len(rows), dtype=np.int64)[None, :] * self.nkeys + kid[:, None]
        at = np.minimum(np.searchsorted(code, wanted), len(code) - 1)
        return code[at] == wanted if len(code) else np.zeros(wanted.shape, dtype=bool)


def _assumed(pos: np.ndarray, df: np.ndarray, below: float) -> tuple[np.ndarray, int]:
    """A, of the positions `pos` (sorted), and its cover: the most common first (by `df`), as many as
    keep their cover below `below` (weighed at PREFIXES lengths, not one by one). The more A holds,
    the fewer posting lists upper() reads, but the less room under the threshold is left to rule a
    pair out: ASSUMED balances the two on generated classes."""
    if below <= 0:
        return np.zeros(len(pos), dtype=bool), 0
    rank = np.empty(len(pos), dtype=np.int64)
    rank[np.argsort(-df, kind="stable")] = np.arange(len(pos))
    lengths = np.unique(np.linspace(0, len(pos), PREFIXES).astype(np.int64))
    covers = _cover(rank[:, None] < lengths[None, :], pos)
    under = np.flatnonzero(covers < below)[-1]  # the empty prefix covers nothing
    return rank < lengths[under], int(covers[under])


def _beyond(pos: np.ndarray, assumed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position, the stretch of tokens [left, right) of its K that A's stretches leave uncovered:
    from the end of A's latest stretch before it to A's next position (empty for A's own). Both ends
    grow with the position."""
    a = pos[assumed]
    if not len(a):
        return pos, pos + K
    after = np.searchsorted(a, pos)
    next_a = np.where(after < len(a), a[np.minimum(after, len(a) - 1)], pos + K)
    left = np.maximum(pos, np.where(after > 0, a[np.maximum(after - 1, 0)] + K, pos))
    right = np.minimum(pos + K, next_a)
    return left, np.where(assumed, left, right)


def _slices(first: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The indices first[k] .. first[k + 1] - 1 of every k of `keys`, one after another."""
    starts, lengths = first[keys], first[keys + 1] - first[keys]
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


def _cover(held: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per column of `held` (positions, columns): the tokens covered by the K-token stretches starting
    at the positions it marks (of sorted `pos`), overlapping stretches counted once; what copydetect's
    copied slices add up to.

    The tokens from one position to the next are covered by the latest marked position at or before
    it, as far as K past that one: one running maximum down the positions, integer arithmetic, no
    per-column work. A position no column marks only lengthens its predecessor's stretch of tokens, so
    it is dropped; a gap of K or more between positions covers what a gap of K does, so gaps are capped
    at K, which keeps the positions small integers."""
    marked = np.flatnonzero(held.any(axis=1))
    if not len(marked):
        return np.zeros(held.shape[1], dtype=np.int64)
    if len(marked) < len(held):
        held = held[marked]
    gaps = np.minimum(np.diff(pos[marked]), K)
    at = np.concatenate([[0], np.cumsum(gaps)])  # the marked positions, gaps capped
    ends = np.append(gaps, K)  # the tokens from each to the next (K past the last)
    small = np.int16 if at[-1] + 2 * K < np.iinfo(np.int16).max else np.int32
    # latest[i, c]: 1 + the index of the latest position at or before i that column c marks (0: none)
    latest = np.where(held, np.arange(1, len(marked) + 1, dtype=small)[:, None], small(0))
    np.maximum.accumulate(latest, axis=0, out=latest)
    start = np.concatenate([[-2 * K], at]).astype(small)  # none: a start too early to reach
    reach = start[latest]
    np.add(reach, (K - at).astype(small)[:, None], out=reach)  # how far past position i the latest stretch reaches
    np.clip(reach, 0, ends.astype(small)[:, None], out=reach)
    return reach.sum(axis=0, dtype=np.int64)
