"""grader.batch.similarity by an inverted index lists exactly what comparing every pair listed (the
method before it, kept here as the oracle), on today's fixtures and on generated classes with plain
copies, disguised copies and independent work (tests/kit/generated_class.py); and the bound that lets
the index leave a pair out holds on every pair."""

import numpy as np
import pytest

from grader.batch import similarity, similarity_index
from tests.kit import generated_class, test_similarity

pytestmark = pytest.mark.sandbox  # copydetect imports matplotlib, whose first import runs fc-list


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
    """What the index leaves out rests on: the tokens of x's code a pair shares are at most x's common
    positions' cover plus K per shared rare position; and _cover measures exactly copydetect's tokens."""
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
    for bound in (0.6, 0.2):  # 0.2: most submissions common-heavy, every pair measured
        index = similarity_index._Index(prints, bound)
        heavy = 0
        for s in range(len(students)):
            upper = index.upper(s)
            heavy += upper is None
            others = np.array([b for b in range(len(students)) if b != s])
            kid = index.kid[s]
            cover = similarity_index._cover(index._shared(others, kid, index.column[kid] >= 0), index.pos[s])
            for b, covered in zip(others, cover, strict=True):
                exact = similarity.score(full[s], full[b])["matched_tokens"]
                assert covered == exact, (students[s], students[b])
                assert upper is None or exact <= upper[b], (students[s], students[b])
        assert heavy < len(students) if bound == 0.6 else heavy > 0  # both ways of the bound are used


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
