"""Staging: the submission's whitelisted files, and the grader code that runs beside them, copied
into the sandbox's scratch folder (grader.sandbox.host)."""

import shutil
from dataclasses import dataclass
from pathlib import Path

GRADER_DIR = Path(__file__).resolve().parent.parent
# torch-only packages that run inside the submission's process
CHILD_PACKAGES = ("sandbox/child", "training")
MAX_SOURCE_BYTES = 1 << 20


@dataclass
class Copied:
    refused: list[str]


def stage(submission: Path, files: dict[str, list[str]], scratch: Path) -> Copied:
    """Copy the whitelisted files of each assignment, plus the code that runs beside them, into scratch.

    What runs in the submission's process is `grader.sandbox.child` and the training library
    it calls, each copied whole; nothing else of the grader is there to import."""
    copied = _copy_tree(submission, files, scratch / "submission")
    kit = scratch / "grader"
    for package in CHILD_PACKAGES:
        shutil.copytree(GRADER_DIR / package, kit / package, ignore=shutil.ignore_patterns("__pycache__"))
    # empty parents: the copied packages import as in the grader, and nothing else comes along
    for package in ("", "sandbox"):
        (kit / package / "__init__.py").touch()
    return copied


def _copy_tree(tree: Path, files: dict[str, list[str]], package: Path) -> Copied:
    refused = []
    package.mkdir(parents=True)
    for assignment, names in files.items():
        src_dir = tree / assignment
        if src_dir.is_symlink() or not src_dir.is_dir():
            continue
        (package / assignment).mkdir()
        for name in ["__init__.py", *names]:
            src = src_dir / name
            if not src.exists() and not src.is_symlink():
                continue
            if src.is_symlink() or not src.is_file() or src.stat().st_size > MAX_SOURCE_BYTES:
                refused.append(f"{assignment}/{name}")
                continue
            shutil.copyfile(src, package / assignment / name)
    return Copied(refused)
