"""Which files of a course its grading suites import: for what ships to students (`grade
release`) and what travels to a Dask worker (grader.batch.cluster), which has the kit
installed and nothing else."""

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

PACKAGE = __name__.partition(".")[0]  # grader


def import_root(folder: Path) -> Path:
    """The folder from which the package holding `folder` is imported: the parent of its
    topmost package (`tests/grading` in the kit: the kit's root, for `import tests.grading`)."""
    folder = folder.resolve()
    while (folder / "__init__.py").is_file():
        folder = folder.parent
    return folder


def closure(start: list[Path], root: Path) -> set[Path]:
    """`start` and every module under `root` that they import, directly or not (the grader
    package aside: it is installed wherever grading runs)."""
    found: set[Path] = set()
    todo = [p.resolve() for p in start]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        if path.suffix == ".py":
            todo += [p for p in imported(path, root) if p not in found]
    return found


def imported(path: Path, root: Path) -> set[Path]:
    """The files under `root` that module `path` imports: packages' __init__.py and modules."""
    package = path.resolve().relative_to(root).parent.parts
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parent = package[:len(package) - node.level + 1] if node.level else ()  # `from ..x import y`
            base = ".".join([*parent, *([node.module] if node.module else [])])
            names += [base, *(f"{base}.{a.name}" for a in node.names)]
    found = set()
    for name in names:
        parts = name.split(".")
        if parts[0] == PACKAGE:
            continue  # the package ships whole
        for i in range(1, len(parts) + 1):
            stem = root.joinpath(*parts[:i])
            found |= {p.resolve() for p in (stem / "__init__.py", stem.parent / f"{stem.name}.py") if p.is_file()}
    return found


def load_file(path: Path, name: str) -> ModuleType:
    """A course file (the bug table, the cases, the repro recipes) imported as module `name`; a file
    that cannot be imported is the course's error (ConfigError naming it)."""
    from grader.course_table import ConfigError
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
