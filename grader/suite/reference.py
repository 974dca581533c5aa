"""The reference tree, imported into the grader's process (the instructors' tier only)."""

from pathlib import Path

from grader.sandbox.child.tree import import_tree

PACKAGE = "_kit_reference"


def load(tree: Path) -> str:
    """Import the reference tree once; return the package name targets resolve in."""
    import_tree(tree, PACKAGE)
    return PACKAGE

