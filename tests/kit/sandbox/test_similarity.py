"""`grade batch`'s similarity (grader.batch.similarity): a disguised copy is listed; correct code
written another way (the kit's correct variants, an independently written assignment1) is not.
The batch's own listing is checked on a real class in test_html.py."""

import ast
import difflib
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from grader.authoring.stubs import make_stub
from grader.batch import similarity
from tests.kit import mutants
from tests.kit.conftest import ROOT, SOLUTIONS
from tests.kit.sandbox import test_torch_backed

# a sandbox test, though it starts nothing itself: copydetect imports matplotlib, whose first import runs fc-list

BLOCK = re.compile(r"^[ \t]*### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION\n", re.M | re.S)
VARIANTS = {**mutants.VARIANTS, **mutants.DEVICE_VARIANTS,
            **{name: patches for name, (_, patches) in test_torch_backed.VARIANTS.items()}}


def files(assignment: str, base=SOLUTIONS) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((base / assignment).glob("*.py")) if p.name != "__init__.py"}


def stubs(assignment: str) -> dict[str, str]:
    return files(assignment, ROOT / "assignments")


def disguise(source: str) -> str:
    """What a student hiding a copy does: every local name and argument renamed, the functions and
    methods in reverse order, the comments gone and the layout redone (ast.unparse)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = {a.arg for a in node.args.args + node.args.kwonlyargs} - {"self"}
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and n.id in names:
                    n.id = f"my_{n.id}"
                elif isinstance(n, ast.arg) and n.arg in names:
                    n.arg = f"my_{n.arg}"

    def reverse(body: list) -> None:
        at = [i for i, n in enumerate(body) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        for i, n in zip(at, [body[i] for i in reversed(at)], strict=True):
            body[i] = n
            if isinstance(n, ast.ClassDef):
                reverse(n.body)

    reverse(tree.body)
    return ast.unparse(tree)


def listed(sources: dict[str, dict[str, str]], assignment: str) -> list[list[str]]:
    pairs = similarity.compare(sources=sources, stubs=stubs(assignment), threshold=similarity.THRESHOLD)
    return [p["students"] for p in pairs]


@pytest.mark.parametrize("assignment", ["assignment1", "assignment2", "assignment3", "assignment4"])
def test_a_disguised_copy_is_listed(assignment):
    original = files(assignment)
    copy = {name: disguise(text) for name, text in original.items()}
    for name, text in copy.items():  # the disguise is real: names changed, order changed, comments gone
        assert "my_" in text and "#" not in text.replace("# ", "") and text != original[name]
    [pair] = similarity.compare(sources={"original": original, "copy": copy}, stubs=stubs(assignment),
                                threshold=similarity.THRESHOLD)
    assert pair["students"] == ["copy", "original"] and max(pair["similarity"]) >= similarity.THRESHOLD
    # the matching lines, side by side: the copy's renamed lines against the original's
    shown = {f["file"] for f in pair["files"] if f["a"] and f["b"]}
    assert shown == set(original), shown
    copied = [text for f in pair["files"] for r in f["a"] for _, text, hit in r["lines"] if hit]
    assert any("my_" in line for line in copied)


def rewritten(solution: str, variant: str, assignment: str) -> tuple[str, str]:
    """The code a variant writes another way, in the stub: each marked block the variant changes holds
    only its changed lines, the solution's (first) or the variant's (second); the lines the variant
    kept are the solution's, not independent work, and the other blocks stay stubs."""
    a, b = solution.splitlines(keepends=True), variant.splitlines(keepends=True)
    changed: tuple[set[int], set[int]] = (set(), set())
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            changed[0].update(range(i1, i2))
            changed[1].update(range(j1, j2))

    def keep(text: str, lines: set[int]) -> str:
        def block(m: re.Match) -> str:
            first = text.count("\n", 0, m.start())
            mine = [line for k, line in enumerate(m.group().splitlines(keepends=True)) if first + k in lines]
            return "".join(mine) if mine else m.group()  # unchanged: left marked, so a stub
        return make_stub(BLOCK.sub(block, text), assignment)

    return keep(solution, changed[0]), keep(variant, changed[1])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_correct_variant_is_not_listed_against_the_solution(name):
    by_assignment: dict[str, tuple[dict, dict]] = {}
    for rel, edits in VARIANTS[name].items():
        assignment, file = rel.split("/")
        solution = (SOLUTIONS / rel).read_text()
        variant = solution
        for old, new in edits:
            assert variant.count(old) == 1, old
            variant = variant.replace(old, new)
        mine, theirs = by_assignment.setdefault(assignment, ({}, {}))
        mine[file], theirs[file] = rewritten(solution, variant, assignment)
    for assignment, (mine, theirs) in by_assignment.items():
        assert mine != theirs
        assert listed({"solution": mine, "variant": theirs}, assignment) == []
        # not for want of code to compare: the same code against itself is all in common
        prints = {f: similarity.fingerprint(f, t, None) for f, t in mine.items()}
        stub_prints = {f: similarity.fingerprint(f, t, None).hashes for f, t in stubs(assignment).items()}
        assert any(p.hashes - stub_prints.get(f, set()) for f, p in prints.items())


# assignment1 written by someone else from the same docstrings (each marked block, in order); it
# gets every point (checked with `grade assignment1 --submission`)
INDEPENDENT = {
    "layer_norm.py": ["""
self.gamma = nn.Parameter(torch.ones(d_model))
self.beta = nn.Parameter(torch.zeros(d_model))
self.eps = float(eps)
""", """
centred = x - x.mean(-1, keepdim=True)
variance = centred.pow(2).mean(-1, keepdim=True)
normed = centred * torch.rsqrt(variance + self.eps)
return normed * self.gamma + self.beta
"""],
    "feed_forward.py": ["""
self.dropout = nn.Dropout(p=dropout)
self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
""", """
hidden = torch.relu(self.linear1(x))
hidden = self.dropout(hidden)
out = self.linear2(hidden)
return out
"""],
    "embedding.py": ["""
self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=d_model, padding_idx=padding_idx)
self.scale = d_model ** 0.5
self.d_model = d_model
""", """
scaled = self.embedding(x) * self.scale
return scaled
""", """
self.position = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
self.token = TokenEmbedding(vocab_size, d_model, padding_idx=padding_idx)
""", """
tokens = self.token(x)
return self.position(tokens)
"""],
    "positional_encoding.py": ["""
self.max_len = max_len
pos = torch.arange(0, max_len).float()[:, None]
freqs = 10000.0 ** (-torch.arange(0, d_model, 2).float() / d_model)
angles = pos * freqs[None, :]
table = torch.zeros(max_len, d_model)
table[:, 0::2] = angles.sin()
table[:, 1::2] = angles[:, : d_model // 2].cos()
self.register_buffer("pe", table)
self.dropout = nn.Dropout(dropout)
""", """
length = x.shape[1]
if length > self.max_len:
    raise ValueError(f"T={length} is longer than max_len={self.max_len}")
x = x + self.pe[:length]
return self.dropout(x)
"""]}


def independent() -> dict[str, str]:
    written = {}
    for name, text in files("assignment1").items():
        bodies = iter(textwrap.indent(body.lstrip("\n"), " " * 8) for body in INDEPENDENT[name])
        written[name] = BLOCK.sub(lambda m, bodies=bodies: next(bodies), text)
    return written


def test_an_independent_solution_is_not_listed_and_its_disguised_copy_is():
    other = independent()
    copy = {name: disguise(text) for name, text in other.items()}
    assert listed({"solution": files("assignment1"), "other": other, "copy": copy}, "assignment1") == [
        ["copy", "other"]]


def test_the_same_class_lists_the_same_pairs_in_every_process():
    """copydetect hashes with Python's hash(), salted per process: the kit hashes k-grams itself."""
    code = ("import json, sys\nfrom grader.batch import similarity\nfrom tests.kit.sandbox.test_similarity import *\n"
            "sources = {'a': files('assignment2'), 'b': {n: disguise(t) for n, t in files('assignment2').items()}}\n"
            "print(json.dumps(similarity.compare(sources=sources, stubs=stubs('assignment2'), threshold=0.01)))\n")
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1] and json.loads(runs[0])


def test_without_copydetect_the_summary_says_nothing_was_compared(monkeypatch):
    from grader import load_course

    monkeypatch.setitem(sys.modules, "copydetect", None)  # what an install without the extra has
    found = similarity.of_class(load_course(ROOT / "course.toml"), "assignment1", {"a": files("assignment1")},
                                threshold=0.6)
    assert found["pairs"] == [] and "copydetect is not installed" in found["unavailable"]


def test_names_in_the_summary_box_are_text_not_markup():
    """A student's folder named like rich markup ("[/]" would end the box with an error)."""
    import io

    from rich.console import Console

    from grader.batch import summary

    pair = {"students": ["[/]", "[bold]ivy"], "similarity": [1.0, 0.9], "matched_tokens": 500,
            "files": [{"file": "layer_norm.py", "a": [{"from": 3, "to": 9}], "b": [{"from": 4, "to": 9}]}]}
    found = {"threshold": 0.6, "pairs": [pair]}
    console = Console(width=80, file=io.StringIO(), record=True)
    console.print(summary._similar(found))
    text = console.export_text()
    assert "[/]" in text and "[bold]ivy" in text and "layer_norm.py 3-9 ↔ 4-9" in text


def test_copies_of_one_source_are_one_group_and_a_disguised_copy_leads():
    """24 students who copied one source give 276 pairs but one group; a disguised copy (99.9%) in the
    same class is the first group in the summary, not pair 68 of 277."""
    import io
    from itertools import combinations

    from rich.console import Console

    from grader.batch import summary

    copied = [f"student{i:02d}" for i in range(24)]
    pairs = [{"students": [a, b], "similarity": [0.93, 0.91], "matched_tokens": 900, "files": []}
             for a, b in combinations(copied, 2)]
    pairs.append({"students": ["[b]disguised", "original"], "similarity": [0.999, 0.97], "matched_tokens": 800,
                  "files": []})
    pairs.append({"students": ["pat", "quinn"], "similarity": [0.7, 0.65], "matched_tokens": 300, "files": []})
    found = similarity.groups(sorted(pairs, key=lambda p: (-max(p["similarity"]), p["students"])))
    assert [(g["students"], g["similarity"], g["pairs"]) for g in found] == [
        (["[b]disguised", "original"], 0.999, 1), (copied, 0.93, 276), (["pat", "quinn"], 0.7, 1)]
    console = Console(width=80, file=io.StringIO(), record=True)
    console.print(summary._similar({"threshold": 0.6, "groups": found, "pairs": pairs}))
    lines = console.export_text().splitlines()
    first = next(i for i, line in enumerate(lines) if "[b]disguised, original" in line)
    assert first < 6 and first < next(i for i, line in enumerate(lines) if "student00" in line)
    assert max(map(len, lines)) <= 80
