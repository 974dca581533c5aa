"""Forbidden APIs: what course.toml says a component must not use, found in its source or seen run.

Each layer alone is easy to evade, so there are two:
- source: the component's file, as staged for grading, is parsed (ast). An attribute chain or a
  name that resolves, through the file's imports, to a forbidden API (`nn.LayerNorm`,
  `torch.nn.functional.layer_norm`, `ln` after `from torch.nn.functional import layer_norm as ln`,
  `torch.nn.modules.normalization.LayerNorm`: compared as torch objects, not as text), and such an
  import itself, is a hit; "name(keyword)" entries hit only calls that pass the keyword.
- executed: the worker records the forbidden APIs the submission's code runs, however it reached
  them (grader.sandbox.child.record); its record is checked here, entry by entry.

A hit scores its component 0. The tools of evasion are only flagged for the instructor, since they
have honest uses (`getattr(self, f"w_{n}")`) and what they reach is caught when it runs: getattr with
a computed name, eval/exec/compile, __import__/importlib/builtins, torch.ops, torch._C,
torch.overrides and torch.utils._python_dispatch (which could switch the recorder off), and the
grader's own package.

What is scanned is what grading can run: the whole file but a top-level `if __name__ ==
"__main__":` block, which runs only when the file is run as a script (a student's self-test that
compares with the forbidden API, as the stubs invite) and never when grading imports it.

A finding inside a top-level class or function named after a component of the file belongs to that
component alone; anywhere else in the file (module level, helpers) it belongs to every component of
the file that forbids it (for flags: that forbids anything).
"""

import ast
from dataclasses import dataclass
from pathlib import Path

from grader.course import Assignment, Component

_EVAL = {"eval", "exec", "compile", "__import__"}
_SUSPECT_MODULES = ("importlib", "builtins", "grader", "torch.ops", "torch._C", "torch.overrides",
                    "torch.utils._python_dispatch")
_LIMIT = 10  # findings kept per component: one is enough to decide, a few help the reader


@dataclass(frozen=True)
class Finding:
    what: str  # the course's name of the API, or what was suspicious
    file: str  # "assignment1/layer_norm.py"
    line: int
    scope: str  # the top-level class or function it is in ("" at module level)
    how: str  # "source" or "executed"

    def as_dict(self) -> dict:
        return {"what": self.what, "where": f"{self.file}:{self.line}", "how": self.how}


def _torch_object(dotted: str):
    """The object torch has under `dotted` ("torch.nn.LayerNorm"), or None."""
    import torch

    obj: object = torch
    for part in dotted.split(".")[1:]:
        try:
            obj = getattr(obj, part)
        except Exception:  # torch.ops raises its own errors for names it lacks
            return None
    return obj


def _script_only(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either way round), with no `else`: it runs only as a script."""
    if not isinstance(node, ast.If) or node.orelse or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


class _Scan(ast.NodeVisitor):
    def __init__(self, file: str, apis: set[str]):
        self.file, self.scope = file, ""
        self.hits: list[Finding] = []
        self.flags: list[Finding] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted module path it stands for
        self.plain: dict[int, str] = {}  # id(torch object) -> course name, for entries without a keyword
        self.keyword: dict[int, list[tuple[str, str]]] = {}  # id(object) -> [(course name, keyword)]
        self.alive: list[object] = []  # the objects behind those ids: no other object can take their id
        for api in apis:
            path, _, kw = api.partition("(")
            obj = _torch_object(path)
            self.alive.append(obj)
            if obj is not None and kw:
                self.keyword.setdefault(id(obj), []).append((api, kw.rstrip(")")))
            elif obj is not None:
                self.plain[id(obj)] = api

    def run(self, tree: ast.Module) -> None:
        tree = ast.Module(body=[node for node in tree.body if not _script_only(node)], type_ignores=[])
        for node in ast.walk(tree):  # aliases first: an import below its use still names the API
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.partition(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in tree.body:
            self.scope = node.name if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else ""
            self.visit(node)

    def _note(self, into: list[Finding], what: str, node: ast.AST) -> None:
        into.append(Finding(what, self.file, getattr(node, "lineno", 0), self.scope, "source"))

    def _dotted(self, node: ast.AST) -> str | None:
        """`F.layer_norm` -> "torch.nn.functional.layer_norm", through the file's imports."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def _check(self, dotted: str, node: ast.AST) -> None:
        suspect = next((m for m in _SUSPECT_MODULES if dotted == m or dotted.startswith(f"{m}.")), None)
        if suspect:
            self._note(self.flags, suspect, node)
        if dotted.startswith("torch.") and (obj := _torch_object(dotted)) is not None and id(obj) in self.plain:
            self._note(self.hits, self.plain[id(obj)], node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check(a.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._check(node.module, node)
            for a in node.names:
                self._check(f"{node.module}.{a.name}", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self._dotted(node)
        if dotted is None:
            self.generic_visit(node)  # the chain does not start at an import: look inside (x.f(F.g).h)
        else:  # and each prefix: nn.LayerNorm.forward names nn.LayerNorm
            parts = dotted.split(".")
            for i in range(1, len(parts) + 1):
                self._check(".".join(parts[:i]), node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _EVAL:
            self._note(self.flags, node.id, node)
        elif node.id in self.aliases and self.aliases[node.id] != node.id:
            self._check(self.aliases[node.id], node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) > 1 and not (
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self._note(self.flags, "getattr with a computed name", node)
        dotted = self._dotted(func) if isinstance(func, (ast.Attribute, ast.Name)) else None
        obj = _torch_object(dotted) if dotted and dotted.startswith("torch.") else None
        given = {k.arg for k in node.keywords}
        for api, kw in self.keyword.get(id(obj), []) if obj is not None else []:
            if kw in given:
                self._note(self.hits, api, node)
        self.generic_visit(node)


def scan(staged: Path, rel: str, apis: set[str]) -> tuple[list[Finding], list[Finding]]:
    """Hits and flags in the staged file `rel` ("assignment1/layer_norm.py") of the tree `staged`."""
    path = staged / rel
    try:
        tree = ast.parse(path.read_bytes(), filename=rel)
    except (OSError, SyntaxError, ValueError):
        return [], []  # missing or not Python: its checks fail already
    s = _Scan(rel, apis)
    s.run(tree)
    return s.hits, s.flags


def executed(record: list, apis: set[str]) -> list[Finding]:
    """The worker's record ([name, file, line, qualname] entries), as far as it is well formed."""
    found = []
    for entry in record if isinstance(record, list) else []:
        if not (isinstance(entry, list) and len(entry) == 4 and entry[0] in apis and isinstance(entry[1], str)
                and type(entry[2]) is int and isinstance(entry[3], str)):
            continue
        found.append(Finding(entry[0], entry[1], entry[2], entry[3].partition(".")[0], "executed"))
    return found


def _owners(components: list[Component], f: Finding, hit: bool) -> list[Component]:
    mine = [c for c in components if c.file == f.file.partition("/")[2] and c.forbidden]
    if hit:
        mine = [c for c in mine if f.what in c.forbidden]
    if f.scope in {c.name for c in components if c.file == f.file.partition("/")[2]}:
        return [c for c in mine if c.name == f.scope]
    return mine


def judge(assignment: Assignment, staged: Path, record: list) -> dict[str, tuple[list[dict], list[dict]]]:
    """Component name -> (hits, flags) as report dicts, for the components that have either."""
    components = list(assignment.components)
    apis = {api for c in components for api in c.forbidden}
    if not apis:
        return {}
    hits: list[Finding] = executed(record, apis)
    flags: list[Finding] = []
    for rel in sorted({f"{assignment.name}/{c.file}" for c in components if c.forbidden}):
        file_hits, file_flags = scan(staged, rel, apis)
        hits += file_hits
        flags += file_flags
    verdict: dict[str, tuple[list[dict], list[dict]]] = {}
    for found, is_hit in ((hits, True), (flags, False)):
        for f in found:
            if not f.file.startswith(f"{assignment.name}/"):
                continue  # another assignment's file: charged when that assignment is graded
            for c in _owners(components, f, is_hit):
                listed = verdict.setdefault(c.name, ([], []))[0 if is_hit else 1]
                if f.as_dict() not in listed and len(listed) < _LIMIT:
                    listed.append(f.as_dict())
    return verdict
