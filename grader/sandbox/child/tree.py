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


def resolve(package: str, target: str):
    """`"assignment1.layer_norm:LayerNorm"` inside `package` -> the object."""
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(f"{package}.{module_name}")
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj
