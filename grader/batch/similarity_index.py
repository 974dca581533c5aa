"""Which pairs of a class can be listed by grader.batch.similarity, found through an inverted index
of the submissions' fingerprints (MOSS's way) instead of by comparing every pair.

Each submission's winnowed fingerprints (a hash at a position of its filtered code, per file) go
into an index, fingerprint -> the submissions that have it. A pair that shares no fingerprint shares
no code and is never listed; the index alone names the pairs that share some.

Very common fingerprints (in more than `common_bound` of the class: the lines the contract dictates)
would make every honest pair share something, so they name no pair. Leaving them out loses no pair
that the all-pairs comparison lists. The proof: a pair is listed only where the code one side x
shares is at least `threshold` of x's code, `share_x >= threshold * total_x` (rounded to three
places, hence SLACK). The code x shares is the union of the K-token stretches at x's shared
positions, so it is at most the union over x's common positions (`common_x`, computed exactly for
x alone) plus K tokens per shared rare position (a union is at most the sum of its parts):

    share_x <= common_x + K * rare_shared_x(pair)

Where `common_x < threshold * total_x` ("x is not common-heavy"), a listed pair must share a rare
fingerprint, so the index of the rare ones names it, and the bound prunes it only where the pair
cannot reach the threshold. A common-heavy x (most of its code is lines many write) is checked
against the whole class. Every pair left is then measured exactly, position by position (`_cover`:
what copydetect's slices add up to), and what passes is compared by copydetect as before (the
caller's grader.batch.similarity.score): the pairs listed are the all-pairs comparison's.
tests/kit/test_similarity_index.py checks that equality, and the bound itself, on generated classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

K = 25  # copydetect's k: tokens covered from a fingerprint's position (grader.batch.similarity.K)
SLACK = 0.001  # a share rounded to three places to reach the threshold is at least this below it
FILE_GAP = 1 << 40  # positions of two files never merge into one stretch
COMMON_MIN = 16  # a fingerprint in at most this many submissions is never common
COMMON_SHARE = 0.02  # ... nor in at most this share of the class


@dataclass
class Prints:
    """A submission's fingerprints in compact form: per file its winnowed (hash, position) arrays and
    token coverage (copydetect's), the boilerplate left out."""

    files: dict[str, tuple[np.ndarray, np.ndarray, float]]

    @property
    def total(self) -> float:
        return sum(cov for _, _, cov in self.files.values())


def common_bound(n: int) -> int:
    """The most submissions a fingerprint may be in and still name pairs (MOSS's -m, grown with the class)."""
    return max(COMMON_MIN, int(n * COMMON_SHARE))


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
    the common keys' presence as a dense matrix, the rare ones' as posting lists."""

    def __init__(self, prints: list[Prints], bound: float):
        self.n = n = len(prints)
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
            owner.append(np.full(len(u), s, dtype=np.int64))
        self.total = np.array([p.total for p in prints])
        every_key = np.concatenate(keys) if keys else np.empty(0, np.int64)
        every_owner = np.concatenate(owner) if owner else np.empty(0, np.int64)
        df = np.bincount(every_key, minlength=start)
        common = df > common_bound(n)
        self.column = np.full(start, -1, dtype=np.int64)  # a common key's column in self.present
        self.column[common] = np.arange(int(common.sum()))
        self.present = np.zeros((n, int(common.sum())), dtype=bool)
        is_common = common[every_key]
        self.present[every_owner[is_common], self.column[every_key[is_common]]] = True
        # rare keys shared by two or more: who has each, as one array sliced by key
        rare = ~is_common & (df[every_key] > 1)
        order = np.argsort(every_key[rare], kind="stable")
        self.holders = every_owner[rare][order]
        self.first = np.zeros(start + 1, dtype=np.int64)
        np.cumsum(np.bincount(every_key[rare], minlength=start), out=self.first[1:])

    def passing(self, s: int, min_match: float) -> np.ndarray:
        """The submissions b whose shared code is at least `bound` of s's code, measured exactly on s's
        side (and, where s comes first, at least `min_match` tokens)."""
        pos, kid, total = self.pos[s], self.kid[s], self.total[s]
        if not len(pos) or total <= 0:
            return np.empty(0, np.int64)
        common = self.column[kid] >= 0
        need = self.bound * total
        upper = self.upper(s)
        if upper is None:  # common-heavy: the whole class
            rows = np.arange(self.n)
        else:
            rows = np.flatnonzero(upper >= need)
        rows = rows[rows != s]
        if not len(rows):
            return rows
        shared = self._shared(rows, kid, common)
        cover = _cover(shared, pos)
        keep = cover >= need
        keep &= (rows < s) | (cover >= min_match - 0.5)  # where s is first, its tokens are the pair's
        return rows[keep]

    def upper(self, s: int) -> np.ndarray | None:
        """Per submission b, a bound on the tokens of s's code that b shares (the module's proof): its
        common positions' cover plus K for each of s's rare positions b has (where b has none, less than
        the threshold needs). None where s is common-heavy (that cover alone reaches the threshold: no b
        is ruled out)."""
        pos, kid = self.pos[s], self.kid[s]
        common = self.column[kid] >= 0
        covered = _cover(common[None, :], pos)[0]
        if covered >= (self.bound * self.total[s]):
            return None
        rare_shared = np.bincount(self.holders[_slices(self.first, kid[~common])], minlength=self.n)
        return covered + K * rare_shared

    def _shared(self, rows: np.ndarray, kid: np.ndarray, common: np.ndarray) -> np.ndarray:
        """(len(rows), len(kid)): whether each b of `rows` has the key at each of s's positions."""
        shared = np.zeros((len(rows), len(kid)), dtype=bool)
        if common.any():
            shared[:, common] = self.present[np.ix_(rows, self.column[kid[common]])]
        rare_at = np.flatnonzero(~common)
        if len(rare_at):
            at = _slices(self.first, kid[rare_at])
            lengths = self.first[kid[rare_at] + 1] - self.first[kid[rare_at]]
            row_of = np.full(self.n, -1, dtype=np.int64)
            row_of[rows] = np.arange(len(rows))
            r = row_of[self.holders[at]]
            c = np.repeat(rare_at, lengths)
            shared[r[r >= 0], c[r >= 0]] = True
        return shared


def _slices(first: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The indices first[k] .. first[k + 1] - 1 of every k of `keys`, one after another."""
    starts, lengths = first[keys], first[keys + 1] - first[keys]
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


def _cover(mask: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per row of `mask` (rows, positions): the tokens covered by the K-token stretches starting at
    the positions it marks (sorted `pos`), overlapping stretches counted once; what copydetect's
    copied slices add up to."""
    rows, n = mask.shape
    at = np.where(mask, np.arange(n), n)
    # the next marked position after each one, or none (n)
    after = np.concatenate([np.minimum.accumulate(at[:, ::-1], axis=1)[:, ::-1][:, 1:],
                            np.full((rows, 1), n)], axis=1)
    ends = np.append(pos, pos[-1] + 2 * K if n else 0)
    return np.where(mask, np.minimum(ends[after] - pos[None, :], K), 0).sum(axis=1)
