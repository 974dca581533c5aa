"""The source half of grader.judging.forbidden: one staged file parsed (ast), its forbidden APIs and the
tools that could hide one found by line (see grader.judging.forbidden for what each costs)."""

import ast
import builtins
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.findings import Evasion, Seen, Sighting

_EVAL = {"eval", "exec", "compile", "__import__"}
_SUSPECT_MODULES = ("importlib", "builtins", "grader", "torch.ops", "torch._C", "torch.overrides",
                    "torch.utils._python_dispatch", "sys.modules", "sys._getframe", "sys._current_frames",
                    "sys.settrace", "sys.setprofile", "sys.meta_path", "sys.path_hooks", "gc", "inspect",
                    "ctypes", "_ctypes", "torch.library", "operator.attrgetter", "operator.methodcaller",
                    # work done in another process, where the recorder and the watch see nothing (issue 51)
                    "os.fork", "os.forkpty", "os.register_at_fork", "os.posix_spawn", "os.posix_spawnp",
                    "posix", "_posixsubprocess", "multiprocessing", "subprocess", "concurrent.futures.process")
# introspection by name or attribute: what it reaches is not in the source (flag -> what the report says)
_INTROSPECTION = {"vars": "vars()", "globals": "globals()", "locals": "locals()", "__builtins__": "__builtins__"}
# the placement check's devices, named (a string "meta", "lazy:0"), or asked of a tensor
_CHECK_DEVICES = re.compile(r"(meta|lazy)(:\d+)?")
_DEVICE_ATTRIBUTES = {"is_meta", "is_cpu"}
# or told apart without naming them (a device is either the CPU or not; the tensors of a placed run are
# of a subclass): compared with the CPU, read as text, or a class compared with torch's (`_device_tell`)
_CPU = re.compile(r"cpu(:\d+)?")
_BUILTINS = set(dir(builtins))  # `type(v).__name__ in ("int", "float")` checks an argument, not a device
_FRAMES = {"__dict__": "__dict__", "__globals__": "__globals__", "__builtins__": "__builtins__",
           "__subclasses__": "__subclasses__",
           **dict.fromkeys(("f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame",
                            "ag_frame"), Evasion.FRAMES)}


@dataclass(frozen=True)
class Finding:
    what: str  # the course's name of the API, or what was suspicious (an Evasion where not a name)
    file: str  # "assignment1/layer_norm.py"
    line: int
    scope: str  # the top-level class or function it is in ("" at module level)
    how: Seen

    def sighting(self) -> Sighting:
        return Sighting(self.what, f"{self.file}:{self.line}", self.how)


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
    def __init__(self, file: str, apis: set[str], names: frozenset[str] = frozenset()):
        self.file, self.scope = file, ""
        self.names = names  # the assignment's component names: a class name compared with one tells nothing
        self.named: dict[str, str] = {}  # names that hold a device read where the scan is (_held_reads)
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
        module_reads = _held_reads(tree.body)
        for node in tree.body:
            self.scope = node.name if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else ""
            self.named = module_reads
            self.visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # a device read kept in a name and compared later tells as much as one compared where it is read
        outer = self.named
        self.named = {**outer, **_held_reads(node.body, outer)}
        self.generic_visit(node)
        self.named = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def _note(self, into: list[Finding], what: str, node: ast.AST) -> None:
        into.append(Finding(what, self.file, getattr(node, "lineno", 0), self.scope, Seen.SOURCE))

    def _dotted(self, node: ast.AST) -> str | None:
        """`F.layer_norm` -> "torch.nn.functional.layer_norm", through the file's imports; so do
        `vars(F)["layer_norm"]`, `F.__dict__["layer_norm"]` and `getattr(F, "layer_norm")`."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute) and node.attr != "__dict__":
                parts.append(node.attr)
                node = node.value
            elif (name := _constant_member(node)) is not None:
                parts.append(name[1])
                node = name[0]
            else:
                break
        if (module := _constant_import(node)) is not None:  # __import__("torch.nn") is torch, as `import` binds
            return ".".join([module.partition(".")[0], *reversed(parts)])
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

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _constant_member(node) is not None and (dotted := self._dotted(node)) is not None:
            self._check(dotted, node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _CHECK_DEVICES.fullmatch(node.value):
            self._note(self.flags, Evasion.DEVICE_TELL, node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if _device_tell([node.left, *node.comparators], self._dotted, self.names, self.named):
            self._note(self.flags, Evasion.DEVICE_TELL, node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAMES:
            self._note(self.flags, _FRAMES[node.attr], node)
        elif node.attr in _DEVICE_ATTRIBUTES:
            self._note(self.flags, Evasion.DEVICE_TELL, node)
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
        elif node.id in _INTROSPECTION and node.id not in self.aliases:
            self._note(self.flags, _INTROSPECTION[node.id], node)
        elif node.id in self.aliases and self.aliases[node.id] != node.id:
            self._check(self.aliases[node.id], node)

    def visit_Call(self, node: ast.Call) -> None:
        if (module := _constant_import(node)) is not None:  # `import copy` written as a call: read as one
            self._check(module, node)
            return
        func = node.func
        if isinstance(func, ast.Attribute) and _device_read(func.value, self.named) in ("device", "text"):
            self._note(self.flags, Evasion.DEVICE_TELL, node)
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) > 1 and not (
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self._note(self.flags, Evasion.COMPUTED_GETATTR, node)
        if _constant_member(node) is not None and (whole := self._dotted(node)) is not None:
            self._check(whole, node)  # getattr(F, "layer_norm")
        dotted = self._dotted(func) if isinstance(func, (ast.Attribute, ast.Name)) else None
        obj = _torch_object(dotted) if dotted and dotted.startswith("torch.") else None
        given = {k.arg for k in node.keywords}
        for api, kw in self.keyword.get(id(obj), []) if obj is not None else []:
            if kw in given:
                self._note(self.hits, api, node)
        self.generic_visit(node)


def _device_read(node: ast.AST, named: Mapping[str, str] = {}) -> str:
    """"device" for a tensor's device or its type (`x.device`, `x.device.type`), "text" for what tells
    devices apart past those (its index, its text: `str(x.device)`, `x.device.type[0]`, an f-string of
    it), "class" for a value's class (`type(x)`, `x.__class__`, their `__name__`), "" for anything else:
    a device passed on (`torch.arange(T, device=x.device)`) is not read. `named`: the names that hold one
    of those reads in the function (`kind = x.device.type`), and what each holds."""
    if isinstance(node, ast.Name):
        return named.get(node.id, "")
    if isinstance(node, ast.NamedExpr):
        return _device_read(node.value, named)
    if isinstance(node, ast.Attribute):
        if node.attr == "device" and not _names_torch(node.value):
            return "device"
        inner = _device_read(node.value, named)
        if node.attr == "type" and inner == "device" and (
                isinstance(node.value, ast.Attribute) and node.value.attr == "device"
                or isinstance(node.value, ast.Name)):
            return "device"
        if inner in ("device", "text"):
            return "text"
        if node.attr == "__class__" or inner == "class" and node.attr in ("__name__", "__qualname__"):
            return "class"
        return ""
    if isinstance(node, ast.Subscript):
        return "text" if _device_read(node.value, named) in ("device", "text") else ""
    if isinstance(node, ast.JoinedStr):
        return "text" if any(_device_read(v.value, named) in ("device", "text") for v in node.values
                             if isinstance(v, ast.FormattedValue)) else ""
    if isinstance(node, ast.Call) and node.args:
        if isinstance(node.func, ast.Name) and node.func.id in ("str", "repr", "format") \
                and _device_read(node.args[0], named) in ("device", "text"):
            return "text"
        if isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1:
            return "class"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # x.device.type.startswith("c")
        return "text" if _device_read(node.func.value, named) in ("device", "text") else ""
    return ""


def _held_reads(body: list[ast.stmt], outer: Mapping[str, str] = {}) -> dict[str, str]:
    """The names assigned a device read (_device_read) in `body`, nested functions left to their own
    visit: `d = x.device`, `kind = str(d)`, `(k := x.device.type)`. A name assigned one in a chain is
    found however the lines are ordered (a pass per link, at most a few)."""
    assigned: list[tuple[str, ast.expr]] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.append((node.targets[0].id, node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.value:
            assigned.append((node.target.id, node.value))
        todo += ast.iter_child_nodes(node)
    named: dict[str, str] = {}
    for _ in range(4):
        found = {name: read for name, value in assigned if (read := _device_read(value, {**outer, **named}))}
        if found == named:
            break
        named = found
    return named


def _names_torch(node: ast.AST) -> bool:
    """`torch` (or `torch.cuda`...): `torch.device` is the class, not a tensor's device."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "torch"


def _device_tell(sides: list[ast.expr], dotted, names: frozenset[str] = frozenset(),
                 named: Mapping[str, str] = {}) -> bool:
    """A comparison that tells the placement check's runs from the CPU's: a device compared with the CPU
    (`x.device.type != "cpu"`, `x.device == torch.device("cpu")`), its index or text compared at all
    (`str(x.device)[0] == "m"`), a class compared with a torch class or a class name with a string
    (`type(x) is torch.Tensor`), other than a module's (torch.nn's, or `names`: the assignment's
    components). Two devices compared with each other (`mask.device != x.device`) and a
    device compared with CUDA (false on the CPU and on the check's devices alike) tell nothing."""
    reads = [_device_read(side, named) for side in sides]
    if "text" in reads:
        return True
    strings = {c.value for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant)
               and isinstance(c.value, str)}
    if "device" in reads and any(_CPU.fullmatch(v) for v in strings):
        return True
    if "class" in reads:
        compared = [e for side, read in zip(sides, reads, strict=True) if read != "class"
                    for e in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])]
        classes = [d for e in compared if isinstance(e, (ast.Attribute, ast.Name)) and (d := dotted(e))]
        # a module's class (`type(m) == nn.Linear`, `type(m).__name__ == "Dropout"`, a component's name) is
        # how honest code picks layers to initialise: only a tensor's class tells a placed run
        return bool(strings - _BUILTINS - _module_names() - names) or any(
            n.startswith("torch.") and not _module_class(_torch_object(n)) for n in classes)
    return False


def _module_class(obj) -> bool:
    import torch

    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


@functools.cache
def _module_names() -> frozenset[str]:
    """The names of torch.nn's module classes ("Linear", "Dropout"), which no placed run's tensor has."""
    import torch

    return frozenset(n for n in dir(torch.nn) if _module_class(getattr(torch.nn, n, None)))


def _constant_import(node: ast.AST) -> str | None:
    """"copy" for `__import__("copy")`, a constant name and nothing else: the import statement it is (the
    Annotated Transformer's `clones` written in one line), checked as one, not flagged as a computed import.
    None for anything else: a computed name or a fromlist stays flagged as `__import__`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" \
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and node.args[0].value:
        return node.args[0].value
    return None


def _constant_member(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(X, "name") for `vars(X)["name"]`, `X.__dict__["name"]`, their `.get("name")`, and
    `getattr(X, "name")`; None for anything else."""
    key = None
    if isinstance(node, ast.Subscript):
        key, holder = node.slice, node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2:
        key = node.args[1]
        return (node.args[0], key.value) if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args:
        key, holder = node.args[0], node.func.value
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
        return holder.value, key.value
    if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "vars" \
            and len(holder.args) == 1:
        return holder.args[0], key.value
    return None


def scan(staged: Path, rel: str, apis: set[str], names: frozenset[str] = frozenset()
         ) -> tuple[list[Finding], list[Finding]]:
    """Hits and flags in the staged file `rel` ("assignment1/layer_norm.py") of the tree `staged`; `names`:
    the assignment's component names."""
    path = staged / rel
    try:
        tree = ast.parse(path.read_bytes(), filename=rel)
    except (OSError, SyntaxError, ValueError):
        return [], []  # missing or not Python: its checks fail already
    s = _Scan(rel, apis, names)
    s.run(tree)
    return s.hits, s.flags
