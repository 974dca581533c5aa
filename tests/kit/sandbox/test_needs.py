"""A test that needs Chromium, Docker or root (tests/kit/needs.py) is skipped where it is missing, with
a reason naming it and how to get it, and fails instead under CI: the README's test command passes on
a fresh machine, and CI never skips a tier. Run for real: pytest on the kit's own Chromium test, with
a PATH that holds no Chromium."""

import os
import subprocess
import sys

from tests.kit.conftest import ROOT

SITE_IN_CHROMIUM = "tests/kit/browser/test_docs.py::test_the_site_opens_in_chromium_with_no_broken_link_or_image"


def pytest_without_chromium(*, ci: bool) -> subprocess.CompletedProcess:
    """That test alone, on a PATH of this interpreter's folder only (no chromium there), CI set or not."""
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PATH": os.path.dirname(sys.executable)}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", SITE_IN_CHROMIUM, "-n", "0", "-q"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_missing_browser_skips_with_how_to_get_it_and_fails_under_ci():
    skipped = pytest_without_chromium(ci=False)
    assert skipped.returncode == 0, skipped.stdout[-3000:]
    assert "1 skipped" in skipped.stdout and "needs chromium (no chromium on PATH); to get it: apt-get install " \
        "chromium" in skipped.stdout, skipped.stdout[-3000:]
    failed = pytest_without_chromium(ci=True)
    assert failed.returncode == 1 and "1 error" in failed.stdout, failed.stdout[-3000:]  # at its setup
    assert "CI runs every tier, and this test needs chromium" in failed.stdout, failed.stdout[-3000:]
