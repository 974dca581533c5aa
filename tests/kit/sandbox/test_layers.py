"""grader's packages keep the layers pyproject.toml declares ([tool.importlinter]; the order and the
reason for each layer: docs/development/architecture.md, "Layers"), checked by import-linter as CI runs
it: imports inside functions and under TYPE_CHECKING counted, every upward import named with its reason."""

import subprocess
import sys
from pathlib import Path

from tests.kit.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_grader_keeps_its_declared_layers():
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 kept, 0 broken" in done.stdout
