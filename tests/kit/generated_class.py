"""Generated classes for the similarity check (tests/kit/sandbox/test_similarity_index.py, benchmarks/class_scale.py).

Every student's code is the solutions' marked blocks rewritten with the student's own random choices,
as different people write the same few lines: their own names, operands the other way round,
sub-expressions in temporaries of their own, a line or two of their own (an assert, a shape read),
independent lines in another order. Some students copy: a plain copy of another's files (renamed
names match anyway: copydetect reads every name as one letter), or a disguised one (renamed, lines
reordered, a few lines added). The class says who copied whom.
"""

from __future__ import annotations

import ast
import random
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n", re.M | re.S)
WORDS = ("value", "out", "result", "tmp", "hidden", "scaled", "part", "acc", "term", "cur", "res", "y", "z")


@dataclass
class Class:
    sources: dict[str, dict[str, str]]  # student -> {file name: text}
    copied: dict[str, str] = field(default_factory=dict)  # copier -> whom they copied (plain copies)
    disguised: dict[str, str] = field(default_factory=dict)  # copier -> whom they copied (disguised)


def solution_files(assignment: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / "solutions" / assignment).glob("*.py"))
            if p.name != "__init__.py"}


def stub_files(assignment: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / "assignments" / assignment).glob("*.py"))
            if p.name != "__init__.py"}


def generate(assignment: str, n: int, *, seed: int = 0, copies: float = 0.03, disguised: float = 0.03) -> Class:
    """A class of `n`: about `copies` of it plain copies of a classmate, `disguised` disguised ones."""
    rng = random.Random(seed)
    solutions = solution_files(assignment)
    names = [f"s{i:05d}" for i in range(n)]
    found = Class({})
    for i, student in enumerate(names):
        roll = rng.random()
        if i and roll < copies:
            found.copied[student] = original = rng.choice(names[:i])
            found.sources[student] = dict(found.sources[original])
        elif i and roll < copies + disguised:
            found.disguised[student] = original = rng.choice(names[:i])
            found.sources[student] = {f: _rewrite_blocks(t, random.Random(rng.random()), light=True)
                                      for f, t in found.sources[original].items()}
        else:
            mine = random.Random(rng.random())
            found.sources[student] = {f: BLOCK.sub(lambda m, r=mine: _block(m, r), t) for f, t in solutions.items()}
    return found


def _block(m: re.Match, rng: random.Random) -> str:
    indent, body = m.group(1), textwrap.dedent(m.group(2))
    return textwrap.indent(rewrite(body, rng, light=False), indent) + "\n"


def _rewrite_blocks(text: str, rng: random.Random, *, light: bool) -> str:
    """A copier's disguise of a classmate's file: the body of every innermost function rewritten (its
    docstring kept), the rest of the file (the stub's docstrings, its layout) as it was."""
    lines = text.splitlines(keepends=True)
    leaves = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)
              and not any(isinstance(c, ast.FunctionDef | ast.ClassDef) for c in ast.walk(n) if c is not n)]
    for node in sorted(leaves, key=lambda n: -n.lineno):
        body = node.body
        skip = 1 if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
        if len(body) <= skip:
            continue
        first = lines[body[skip].lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        new = "".join(textwrap.indent(ast.unparse(s), indent) + "\n"
                      for s in _statements(body[skip:], rng, light=light))
        lines[body[skip].lineno - 1:node.end_lineno] = [new]
    return "".join(lines)


def rewrite(body: str, rng: random.Random, *, light: bool) -> str:
    """The statements of `body` as this student writes them."""
    return "\n".join(ast.unparse(s) for s in _statements(ast.parse(body).body, rng, light=light))


def _statements(body: list[ast.stmt], rng: random.Random, *, light: bool) -> list[ast.stmt]:
    stored = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    # in sorted order: a set's order follows the process's hash seed, and the class must be the same in every run
    renames = {name: f"{rng.choice(WORDS)}_{rng.randrange(100)}" for name in sorted(stored)}
    read = sorted({n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)} - stored) or ["self"]
    out: list[ast.stmt] = []
    # every block gets a line of the student's own, one in two statements another: independent work
    # shares less than half its code with anyone, so no two honest students are a pair at 60%
    own = rng.randrange(len(body)) if not light else -1
    for at, stmt in enumerate(body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in renames:
                node.id = renames[node.id]
        if not light:
            out.extend(_restyle(stmt, rng))
        if at == own or rng.random() < (0.15 if light else 0.5):
            out.append(_added(rng, read))
        out.append(stmt)
    if len(out) > 2:  # two neighbours that do not read each other's names, the other way round
        i = rng.randrange(len(out) - 1)
        if _independent(out[i], out[i + 1]):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _restyle(stmt: ast.stmt, rng: random.Random) -> list[ast.stmt]:
    """`stmt` written another way in place (operands swapped, keywords reordered, a method as a torch
    function); the temporaries it now reads, to go before it."""
    before: list[ast.stmt] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult) and rng.random() < 0.5:
            node.left, node.right = node.right, node.left
        if isinstance(node, ast.Call):
            rng.shuffle(node.keywords)
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in ("self", "torch",
                                                                                                   "nn", "F", "math") \
                    and rng.random() < 0.5:
                node.args.insert(0, f.value)
                node.func = ast.Attribute(ast.Name("torch", ast.Load()), f.attr, ast.Load())
            for i, arg in enumerate(node.args):
                if isinstance(arg, ast.BinOp | ast.Call) and rng.random() < 0.4:
                    temp = f"{rng.choice(WORDS)}_{rng.randrange(100)}"
                    before.append(ast.Assign([ast.Name(temp, ast.Store())], arg, lineno=0))
                    node.args[i] = ast.Name(temp, ast.Load())
    value = getattr(stmt, "value", None)
    if isinstance(stmt, ast.Assign | ast.Return) and isinstance(value, ast.BinOp) and rng.random() < 0.5:
        temp = f"{rng.choice(WORDS)}_{rng.randrange(100)}"
        before.append(ast.Assign([ast.Name(temp, ast.Store())], value.left, lineno=0))
        value.left = ast.Name(temp, ast.Load())
    return before


def _added(rng: random.Random, read: list[str]) -> ast.stmt:
    name, k, new = rng.choice(read), rng.randrange(1, 9), f"{rng.choice(WORDS)}_{rng.randrange(100)}"
    return ast.parse(rng.choice([
        f"assert {name} is not None, 'check {k}'",
        f"{new} = {k} * {rng.randrange(100)} + {rng.randrange(100)}",
        f"{new} = getattr({name}, 'shape', None)",
        f"if {name} is None:\n    raise ValueError('{new} {k}')",
        f"{new} = [{k}] * {rng.randrange(2, 9)}",
        f"{new} = str({name})[:{k}]",
        f"{new} = len(str({name})) > {k}",
        f"print('{new}', {k}) if {name} is None else None",
        f"{new} = ({name}, {k})",
    ])).body[0]


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    if isinstance(a, ast.Return | ast.If | ast.Raise) or isinstance(b, ast.Return | ast.If | ast.Raise):
        return False

    def names(s: ast.stmt, ctx: type) -> set[str]:
        return {ast.unparse(n) for n in ast.walk(s) if isinstance(n, ast.Name | ast.Attribute)
                and isinstance(n.ctx, ctx)}
    written, other = names(a, ast.Store), names(b, ast.Store)
    return not (written & (names(b, ast.Load) | other) or other & names(a, ast.Load))
