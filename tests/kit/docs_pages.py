"""What the docs' tests read (tests/kit/unit/, sandbox/ and browser/test_docs.py): the docs hooks
(tools/docs_hooks.py), every text a reader gets, and the fixture `site`, the site built strictly."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import load_course
from grader.authoring.readme import readme_text
from tests.kit.conftest import ROOT

spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools/docs_hooks.py")
assert spec and spec.loader
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

DOCS = ROOT / "docs"


def sources() -> dict[str, str]:
    """Every text a reader gets: the docs pages, the kit's READMEs, and the student README."""
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(DOCS.rglob("*.md"))}
    for name in ("README.md", "CONTRIBUTING.md"):
        texts[name] = (ROOT / name).read_text()
    texts["student README"] = readme_text(load_course(ROOT / "course.toml"))
    return texts


@pytest.fixture(scope="session", name="site")
def site_fixture(tmp_path_factory) -> Path:
    """The site built strictly, once per test process: the fixture `site` of the docs' tests (imported into
    their modules)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    return out


def _env() -> dict[str, str]:
    return dict(os.environ)
