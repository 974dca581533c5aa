"""Pairs of submissions that share much of their code: winnowing (MOSS's method) by copydetect.

copydetect tokenises each file with pygments and replaces every name with one letter (so renamed
variables match), hashes its k-grams, and keeps a winnowed subset of them as its fingerprint;
shared fingerprints are shared code, wherever it sits in the file (so reordered functions match).
The stubs handed out are boilerplate: their fingerprints are nobody's. Only the k-gram hash is
this module's own: copydetect uses Python's hash(), salted per process, and a batch run twice must
list the same pairs.

A pair is listed when the code they share is at least `threshold` of either one's code (after the
boilerplate) and at least MIN_MATCH tokens: a short stretch in common, a line or two that the
contract's names dictate, is no evidence on its own.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

THRESHOLD = 0.6  # the default share of either's code that lists a pair
K = 25  # tokens of the shortest match seen (copydetect's default noise threshold)
GUARANTEE = 30  # tokens of the shortest match always seen (its default guarantee threshold)
MIN_MATCH = 100  # tokens in common below which a pair is never listed (about four lines)
MAX_FILE_BYTES = 256 << 10  # read of each file: a huge file costs no student an hour of hashing
CONTEXT = 1  # lines shown around each matching stretch


@dataclass
class Fingerprint:
    """What copydetect.compare_files reads of a copydetect.CodeFingerprint."""

    raw_code: str
    filtered_code: str
    offsets: object  # numpy arrays, from copydetect
    hashes: set[int]
    hash_idx: dict[int, list[int]]
    token_coverage: float
    k: int = K


def available() -> str:
    """"" where copydetect can be imported, else why not (a sentence for the summary)."""
    try:
        import copydetect  # noqa: F401
    except ImportError as e:
        return f"copydetect is not installed ({e}); pip install \"transformer-course-kit[instructor]\""
    return ""


def of_class(course, assignment: str, sources: dict[str, dict[str, str]], *, threshold: float,
             jobs: int = 1) -> dict:
    """summary.json's "similarity": the pairs listed, or why none could be compared. `course`: a
    grader.course.Course, whose stubs are the boilerplate; `jobs`: processes that fingerprint."""
    why = available()
    if why:
        return {"threshold": threshold, "unavailable": why, "groups": [], "pairs": []}
    stubs = read(course.assignments_dir, assignment, course.assignment(assignment).files)
    pairs = compare(sources=sources, stubs=stubs, threshold=threshold, jobs=jobs)
    return {"threshold": threshold, "min_match_tokens": MIN_MATCH, "groups": groups(pairs), "pairs": pairs}


def groups(pairs: list[dict]) -> list[dict]:
    """The students linked by listed pairs, as groups (one source copied by 24 students is one group of
    24, not 276 pairs), most similar first: {"students", "similarity": the highest share of a pair in
    it, "pairs": how many of its pairs are listed}."""
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.setdefault(s, s) != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for p in pairs:
        a, b = (root(s) for s in p["students"])
        parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for s in sorted(parent):
        members.setdefault(root(s), []).append(s)
    found = []
    for students in members.values():
        inside = [p for p in pairs if root(p["students"][0]) == root(students[0])]
        found.append({"students": students, "similarity": max(max(p["similarity"]) for p in inside),
                      "pairs": len(inside)})
    return sorted(found, key=lambda g: (-g["similarity"], -len(g["students"]), g["students"]))


def read(tree: Path, assignment: str, files: tuple[str, ...]) -> dict[str, str]:
    """The assignment's files of a submission's tree, as text (at most MAX_FILE_BYTES of each)."""
    found = {}
    for name in files:
        path = tree / assignment / name
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as f:
                found[name] = f.read(MAX_FILE_BYTES).decode(errors="replace")
    return found


def fingerprint(name: str, text: str, boilerplate=None) -> Fingerprint:
    filtered, offsets, hashes, idx = _winnowed(name, text, boilerplate)
    return _assemble(text, filtered, offsets, hashes, idx)


def _winnowed(name: str, text: str, boilerplate):
    """copydetect's filtered code, its offsets, and the winnowed hashes with their positions, the
    boilerplate's left out."""
    import numpy as np
    from copydetect.utils import filter_code, winnow

    filtered, offsets = filter_code(text, name, "python")
    kgrams = [filtered[i:i + K].encode() for i in range(len(filtered) - K + 1)]
    hashes = np.array([int.from_bytes(hashlib.blake2b(g, digest_size=8).digest(), "little", signed=True)
                       for g in kgrams], dtype=np.int64)
    hashes, idx = winnow(hashes, GUARANTEE - K + 1, remove_duplicates=False)
    if boilerplate is not None and len(boilerplate):
        keep = ~np.isin(hashes, boilerplate)
        hashes, idx = hashes[keep], idx[keep]
    return filtered, offsets, hashes, idx


def _assemble(text: str, filtered: str, offsets, hashes, idx, coverage: float | None = None) -> Fingerprint:
    from copydetect.utils import get_token_coverage

    hash_idx: dict[int, list[int]] = {}
    for h, i in zip(hashes.tolist(), idx.tolist(), strict=True):
        hash_idx.setdefault(h, []).append(i)
    if coverage is None:
        coverage = float(get_token_coverage(hash_idx, K, len(filtered)))
    return Fingerprint(text, filtered, offsets, set(hash_idx), hash_idx, coverage)


def compare(*, sources: dict[str, dict[str, str]], stubs: dict[str, str], threshold: float,
            earlier: dict[str, dict[str, str]] | None = None, progress: Progress | None = None,
            jobs: int = 1) -> list[dict]:
    """The pairs listed, most similar first. `sources`: student -> {file name: text}; `stubs`:
    file name -> the stub's text; `threshold`: a fraction in (0, 1]. `earlier`: submissions of
    earlier terms (names apart from `sources`'), each compared with `sources`, not with each other.
    `progress(stage, done, total)`: told as the class is fingerprinted and indexed. `jobs`: processes
    that fingerprint (tokenising is most of the time; nothing of a submission is run).

    The pairs compared are only those an inverted index of the fingerprints names
    (grader.batch.similarity_index, which says why no pair listed by comparing all is lost)."""
    import numpy as np

    from grader.batch import similarity_index

    earlier = earlier or {}
    if set(earlier) & set(sources):
        raise ValueError(f"earlier: names also in sources: {sorted(set(earlier) & set(sources))[:3]}")
    boiler = {name: np.array(sorted(fingerprint(name, text).hashes), dtype=np.int64) for name, text in stubs.items()}
    texts = {**earlier, **sources}
    students = sorted(texts)  # the index's order is the pairs' (the first of a pair counts its tokens)
    prints = list(_fingerprints([texts[s] for s in students], boiler, jobs, progress))
    done = [0]

    def indexed(k: int) -> None:
        done[0] += k
        _tell(progress, "comparing", done[0], len(students))

    found = similarity_index.candidates(prints, threshold=threshold, min_match=MIN_MATCH, progress=indexed)
    full: dict[str, dict[str, Fingerprint]] = {}
    pairs = []
    for i, j in found:
        a, b = students[i], students[j]
        if a in earlier and b in earlier:  # two earlier terms' submissions: not this term's concern
            continue
        pair = score(_screening(prints[i]), _screening(prints[j]))
        if pair["matched_tokens"] >= MIN_MATCH and max(pair["similarity"]) >= threshold:
            for s in (a, b):
                if s not in full:
                    full[s] = {name: fingerprint(name, text, boiler.get(name)) for name, text in texts[s].items()}
            pairs.append({"students": [a, b], **score(full[a], full[b], stubs)})
    return sorted(pairs, key=lambda p: (-max(p["similarity"]), p["students"]))


Progress = Callable[[str, int, int], None]
CHUNK = 32  # submissions fingerprinted per task of a process


def _fingerprints(texts: list[dict[str, str]], boiler: dict, jobs: int, progress: Progress | None):
    """Each submission's compact fingerprints (in order), in `jobs` processes where the class is big."""
    if jobs > 1 and len(texts) > 2 * CHUNK:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawned, not forked: a batch's process may hold threads (Dask's, rich's)
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for i, found in enumerate(pool.map(_prints_of, texts, [boiler] * len(texts), chunksize=CHUNK)):
                _tell(progress, "fingerprinting", i + 1, len(texts))
                yield found
        return
    for i, files in enumerate(texts):
        yield _prints_of(files, boiler)
        _tell(progress, "fingerprinting", i + 1, len(texts))


def _prints_of(files: dict[str, str], boiler: dict):
    from grader.batch import similarity_index

    return similarity_index.Prints({name: _compact(*_winnowed(name, text, boiler.get(name)))
                                    for name, text in files.items()})


def _tell(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


def _compact(filtered: str, offsets, hashes, idx) -> tuple:
    """What the index keeps of a file: its hashes, their positions and its token coverage."""
    return hashes, idx, _assemble("", filtered, offsets, hashes, idx).token_coverage


def _screening(prints) -> dict[str, Fingerprint]:
    """Fingerprints enough for score() without stubs: copydetect.compare_files reads of the code only
    whether the filtered code is empty (never, where a hash is shared) and maps slices back to the
    text with the offsets only when there are some (none here: screening shows no lines)."""
    import numpy as np

    found = {}
    for name, (hashes, idx, coverage) in prints.files.items():
        found[name] = _assemble("", "x" if len(hashes) else "", np.empty((0, 2), dtype=np.int64), hashes, idx,
                                coverage)
    return found


def score(a: dict[str, Fingerprint], b: dict[str, Fingerprint], stubs: dict[str, str] | None = None) -> dict:
    """What two submissions share: per side the fraction of its code, the tokens in common, and
    with `stubs` (file name -> text; its lines are not shown as matching) per file the line ranges
    that match (1-based, inclusive) with their text; without, "files" is empty (a class has many
    pairs, and few are listed)."""
    from copydetect import compare_files

    shared = [0.0, 0.0]
    files = []
    for name in sorted(set(a) & set(b)):
        if not a[name].hashes & b[name].hashes:
            continue
        overlap, (sim_a, sim_b), (slices_a, slices_b) = compare_files(a[name], b[name])
        shared[0] += float(overlap)
        shared[1] += float(sim_b) * b[name].token_coverage
        if stubs is not None:
            files.append({"file": name, "a": _lines(a[name].raw_code, slices_a, stubs.get(name, "")),
                          "b": _lines(b[name].raw_code, slices_b, stubs.get(name, ""))})
    total = [sum(f.token_coverage for f in side.values()) for side in (a, b)]
    return {"similarity": [round(s / t, 3) if t else 0.0 for s, t in zip(shared, total, strict=True)],
            "matched_tokens": round(shared[0]), "files": files}


def _lines(text: str, slices, stub: str) -> list[dict]:
    """The matching stretches of `text` (copydetect's character slices) as merged line ranges,
    each with CONTEXT lines around it: {"from", "to", "lines": [[number, text, matched], ...]}.
    A stretch's blank lines and the lines it shares with the stub (a docstring between two
    matching methods) are not counted as matching."""
    handed_out = {"", *(line.strip() for line in stub.split("\n"))}
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    lines = text.split("\n")
    matched: set[int] = set()
    for lo, hi in zip(*(s.tolist() for s in slices), strict=True):
        first = bisect.bisect_right(starts, lo) - 1
        last = bisect.bisect_right(starts, max(lo, hi - 1)) - 1
        matched.update(n for n in range(first, last + 1) if lines[n].strip() not in handed_out)
    ranges: list[list[int]] = []
    for n in sorted(matched):
        if ranges and n <= ranges[-1][1] + 1 + 2 * CONTEXT:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    out = []
    for first, last in ranges:
        lo, hi = max(0, first - CONTEXT), min(len(lines) - 1, last + CONTEXT)
        out.append({"from": first + 1, "to": last + 1,
                    "lines": [[n + 1, lines[n], n in matched] for n in range(lo, hi + 1)]})
    return out
