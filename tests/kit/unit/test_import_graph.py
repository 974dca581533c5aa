"""The house: grader's modules import each other without a circle, so that each layer sits on the
ones below it (the pipeline under the warm grader, its helper, reuse and watch; the commands under
the command line; the batch's pages under its run).

An import counts wherever it stands, at a module's top or inside a function (a function-level
import is a circle that is only put off), and `importlib.import_module` of a constant name or an
f-string's constant prefix counts too; imports under `if TYPE_CHECKING:` never run and do not.
`from grader import x` is an import of the submodule x where there is one: every submodule's
import runs its package's __init__ first, so only the names an __init__ defines itself make an
edge to it."""

import ast
from pathlib import Path

from tests.kit.conftest import ROOT

GRADER = ROOT / "grader"


def modules(package: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imported(node: ast.AST, package: str) -> list[str]:
    """The dotted names `node` imports (each a module or a name in one), [] if it imports nothing."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        parent = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
        base = ".".join([*parent, *([node.module] if node.module else [])])
        return [f"{base}.{a.name}" for a in node.names]
    if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args):
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            return [f"{arg.values[0].value}*"]  # any module under the prefix
    return []


def graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    mods = modules(package)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
        while todo:
            node = todo.pop()
            todo += [child for child in ast.iter_child_nodes(node) if not _type_checking(child)]
            for target in _imported(node, here):
                if target.endswith("*"):
                    hits = {m for m in mods if m.startswith(target[:-1])}
                else:  # the module itself, else the module that defines the name
                    hits = {target} if target in mods else {target.rpartition(".")[0]} & mods.keys()
                edges[name] |= hits - {name}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _circle(edges: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest way from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(group)


def test_grader_imports_no_circle():
    edges = graph(GRADER)
    found = circles(edges)
    assert not found, "import circles: " + "; ".join(
        f"{' -> '.join(_circle(edges, set(group)))} (of {', '.join(group)})" for group in found)


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The check can fail: a circle of each kind the house had (function-level, importlib, a name
    of a package's __init__) is found, and a TYPE_CHECKING import is not one."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "def f():\n    from pkg.a import x\n",
        "a.py": "from pkg import f\nx = 1\n",  # a name of the __init__: a circle with it
        "b.py": "def g():\n    from . import c\n",
        "c.py": "import importlib\nimportlib.import_module('pkg.b')\n",
        "d.py": "import importlib\n\ndef h(n):\n    return importlib.import_module(f'pkg.sub.{n}')\n",
        "sub/__init__.py": "",
        "sub/e.py": "from ..d import h\n",
        "t.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.u import y\n",
        "u.py": "from pkg.t import TYPE_CHECKING\ny = 2\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    found = sorted(circles(graph(pkg)))
    assert found == [["pkg", "pkg.a"], ["pkg.b", "pkg.c"], ["pkg.d", "pkg.sub.e"]]
