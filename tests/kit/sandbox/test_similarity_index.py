"""grader.batch.similarity by an inverted index lists exactly what comparing every pair listed (the
method before it, kept here as the oracle), on today's fixtures and on generated classes with plain
copies, disguised copies and independent work (tests/kit/generated_class.py); and the bound that lets
the index leave a pair out holds on every pair."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.batch import similarity, similarity_index
from tests.kit import generated_class
from tests.kit.sandbox import test_similarity
from tests.kit.strategies import KIT

# a sandbox test, though it starts nothing itself: copydetect imports matplotlib, whose first import runs fc-list


def all_pairs(sources: dict[str, dict[str, str]], stubs: dict[str, str], threshold: float) -> list[dict]:
    """The comparison of every pair, as grader.batch.similarity.compare did it before the index."""
    boiler = {name: np.array(sorted(similarity.fingerprint(name, text).hashes), dtype=np.int64)
              for name, text in stubs.items()}
    prints = {student: {name: similarity.fingerprint(name, text, boiler.get(name)) for name, text in files.items()}
              for student, files in sources.items()}
    students = sorted(prints)
    pairs = []
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            pair = similarity.score(prints[a], prints[b])
            if pair["matched_tokens"] >= similarity.MIN_MATCH and max(pair["similarity"]) >= threshold:
                pairs.append({"students": [a, b], **similarity.score(prints[a], prints[b], stubs)})
    return sorted(pairs, key=lambda p: (-max(p["similarity"]), p["students"]))


def check_same(sources: dict[str, dict[str, str]], stubs: dict[str, str], threshold: float) -> list[dict]:
    expected = all_pairs(sources, stubs, threshold)
    found = similarity.compare(sources=sources, stubs=stubs, threshold=threshold)
    assert [p["students"] for p in found] == [p["students"] for p in expected]
    assert found == expected
    assert similarity.groups(found) == similarity.groups(expected)
    return found


def test_todays_fixtures_list_the_same_pairs():
    """The fixtures of test_similarity.py in one class: the solution, an independent solution, their
    disguised copies and the kit's correct variants, at the default threshold and at one that lists
    nearly every pair."""
    sources = {"solution": test_similarity.files("assignment1"), "other": test_similarity.independent()}
    sources["copy"] = {n: test_similarity.disguise(t) for n, t in sources["other"].items()}
    sources["copy2"] = {n: test_similarity.disguise(t) for n, t in sources["solution"].items()}
    for name in sorted(test_similarity.VARIANTS):
        edits = test_similarity.VARIANTS[name]
        if all(rel.startswith("assignment1/") for rel in edits):
            files = dict(sources["solution"])
            for rel, patches in edits.items():
                for old, new in patches:
                    files[rel.split("/")[1]] = files[rel.split("/")[1]].replace(old, new)
            sources[name] = files
    assert len(sources) > 5
    stubs = test_similarity.stubs("assignment1")
    assert [p["students"] for p in check_same(sources, stubs, similarity.THRESHOLD)
            if {"copy", "other"} == set(p["students"])]
    assert len(check_same(sources, stubs, 0.05)) > len(sources)


@pytest.mark.parametrize(("assignment", "n", "threshold"), [
    ("assignment1", 36, 0.6), ("assignment1", 24, 0.3), ("assignment1", 36, 0.95), ("assignment2", 24, 0.6)])
def test_a_generated_class_lists_the_same_pairs(assignment, n, threshold):
    made = generated_class.generate(assignment, n, seed=n, copies=0.08, disguised=0.08)
    assert made.copied and made.disguised
    found = check_same(made.sources, generated_class.stub_files(assignment), threshold)
    listed = {tuple(p["students"]) for p in found}
    if threshold <= 0.6:  # the planted copies are there to find
        for copier, original in {**made.copied, **made.disguised}.items():
            assert tuple(sorted([copier, original])) in listed, (copier, original)


def test_the_bound_holds_and_the_cover_is_copydetects_on_every_pair():
    """What the index leaves out rests on: the tokens of x's code a pair shares are at most what the
    cover of x's assumed positions and of the shared ones adds up to; and _cover measures exactly
    copydetect's tokens."""
    assignment = "assignment1"
    made = generated_class.generate(assignment, 30, seed=5, copies=0.1, disguised=0.1)
    stubs = generated_class.stub_files(assignment)
    boiler = {name: np.array(sorted(similarity.fingerprint(name, text).hashes), dtype=np.int64)
              for name, text in stubs.items()}
    students = sorted(made.sources)
    full = [{name: similarity.fingerprint(name, text, boiler.get(name)) for name, text in made.sources[s].items()}
            for s in students]
    prints = [similarity_index.Prints({n: (np.array([h for h, ii in fp.hash_idx.items() for _ in ii], dtype=np.int64),
                                           np.array([i for ii in fp.hash_idx.values() for i in ii], dtype=np.int64),
                                           fp.token_coverage) for n, fp in f.items()}) for f in full]
    for bound in (0.6, 0.2):  # 0.2: little room under the threshold, few positions assumed
        index = similarity_index._Index(prints, bound)
        ruled_out = 0  # pairs whose bound is under the threshold, never measured
        for s in range(len(students)):
            upper = index.upper(s)
            others = np.array([b for b in range(len(students)) if b != s])
            cover = similarity_index._cover(index.held(others, index.kid[s]), index.pos[s])
            for b, covered in zip(others, cover, strict=True):
                exact = similarity.score(full[s], full[b])["matched_tokens"]
                assert covered == exact, (students[s], students[b])
                assert exact <= upper[b], (students[s], students[b])
            ruled_out += int((upper[others] < bound * index.total[s]).sum())
        assert ruled_out or bound < 0.6  # the bound leaves pairs out, not only holds


def _union(starts) -> int:
    return len({t for p in starts for t in range(int(p), int(p) + similarity_index.K)})


@KIT
@given(st.lists(st.dictionaries(st.sampled_from(["a.py", "b.py"]),
                                st.lists(st.tuples(st.integers(0, 200), st.integers(0, 9)), max_size=25)),
                min_size=2, max_size=6),
       st.sampled_from([0.2, 0.6, 0.95]))
def test_the_bound_is_the_cover_of_the_assumed_and_shared_positions(made, bound):
    """upper() is exactly the cover of s's assumed positions with those whose key b has, overlapping
    stretches counted once (its pruning is no looser than the proof says), and held() and _cover
    measure the shared positions alone as a plain union of stretches does; on small made-up
    submissions, fingerprints drawn from few hashes so that they share, two files apart."""
    prints = []
    for files in made:
        found = {}
        for name, at in files.items():
            idx = np.array(sorted({p for p, _ in at}), dtype=np.int64)
            hashes = np.array([dict(at)[p] for p in idx.tolist()], dtype=np.int64)
            found[name] = (hashes, idx, float(_union(idx)))
        prints.append(similarity_index.Prints(found))
    index = similarity_index._Index(prints, bound)
    for s in range(len(prints)):
        pos, kid = index.pos[s], index.kid[s]
        assumed, _ = similarity_index._assumed(pos, index.df[kid], similarity_index.ASSUMED * bound * index.total[s])
        upper = index.upper(s)
        for b in range(len(prints)):
            if b == s:
                continue
            theirs = np.isin(kid, index.kid[b])
            assert upper[b] == _union(pos[assumed | theirs]), (s, b)
            assert similarity_index._cover(index.held(np.array([b]), kid), pos)[0] == _union(pos[theirs]), (s, b)


def test_an_honest_class_is_not_every_pair():
    """The common fingerprints name no pair: an honest class's candidates are few, not n(n-1)/2."""
    made = generated_class.generate("assignment1", 60, seed=7, copies=0.0, disguised=0.0)
    stubs = generated_class.stub_files("assignment1")
    boiler = {name: np.array(sorted(similarity.fingerprint(name, text).hashes), dtype=np.int64)
              for name, text in stubs.items()}
    prints = [similarity_index.Prints({name: similarity._compact(*similarity._winnowed(name, text, boiler.get(name)))
                                       for name, text in made.sources[s].items()}) for s in sorted(made.sources)]
    found = similarity_index.candidates(prints, threshold=similarity.THRESHOLD, min_match=similarity.MIN_MATCH)
    assert len(found) < 60 * 59 / 2 / 20, len(found)


def test_fingerprinting_in_two_processes_lists_the_same_pairs():
    made = generated_class.generate("assignment1", 2 * similarity.CHUNK + 6, seed=3)
    stubs = generated_class.stub_files("assignment1")
    told: list[tuple[str, int, int]] = []
    two = similarity.compare(sources=made.sources, stubs=stubs, threshold=similarity.THRESHOLD, jobs=2,
                             progress=lambda *a: told.append(a))
    assert two == similarity.compare(sources=made.sources, stubs=stubs, threshold=similarity.THRESHOLD) and two
    n = len(made.sources)
    assert ("fingerprinting", n, n) in told and ("comparing", n, n) in told


def test_a_generated_class_is_the_same_in_every_process():
    """The class the tests and benchmarks/class_scale.py compare is a function of its seed alone: Python's
    hash seed (another in every process) decides no rename, so every run checks the same pairs."""
    import subprocess
    import sys

    from tests.kit.conftest import ROOT

    make = ("import hashlib; from tests.kit import generated_class as g\n"
            "made = g.generate('assignment1', 30, seed=30).sources\n"
            "print(hashlib.sha256(repr(sorted((k, sorted(v.items())) for k, v in made.items())).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", make], cwd=ROOT, env={"PYTHONHASHSEED": seed, "PATH": ""},
                              capture_output=True, text=True, check=True).stdout for seed in ("1", "2")}
    assert len(digests) == 1, digests
