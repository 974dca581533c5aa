"""Import an assignment tree (a submission or the reference) as one package."""

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_tree(root: Path | str, name: str) -> ModuleType:
    """Make `root` importable as package `name`; its assignments become `name.assignmentN`.

    The tree needs no top-level `__init__.py`: the package is made here, so that the
    relative imports between assignments (`from ..assignment1 import ...`) resolve
    inside this tree and nowhere else.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(Path(root).resolve())]
    sys.modules[name] = package
    return package


def import_alone(name: str, root: str):
    """Import module `name` of the submission even where the __init__.py of a package above it fails
    on a sibling (a syntax error in multi_head_attention.py, imported by assignment2/__init__.py):
    each package whose __init__ raised is put in place as a bare package of its folder, and the
    import tried again, so that a component is graded on its own file and the files it imports. A
    module that fails by itself (or through what it imports) raises as before. `root`: the tree's
    package (import_tree's `name`)."""
    try:
        return importlib.import_module(name)
    except Exception:
        bare = False
        parts = name.split(".")
        for i in range(root.count(".") + 2, len(parts)):  # the packages between the root and the module
            package = ".".join(parts[:i])
            if package in sys.modules:
                continue
            parent = sys.modules.get(".".join(parts[:i - 1]))
            if parent is None or not getattr(parent, "__path__", None):
                break
            spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
            module = importlib.util.module_from_spec(spec)
            module.__path__ = [f"{parent.__path__[0]}/{parts[i - 1]}"]
            sys.modules[package] = module
            setattr(parent, parts[i - 1], module)
            bare = True
        if not bare:
            raise
    return importlib.import_module(name)


def resolve(package: str, target: str):
    """`"assignment1.layer_norm:LayerNorm"` inside `package` -> the object."""
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(f"{package}.{module_name}")
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj
