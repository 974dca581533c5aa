"""The kit's course.toml with a [feedback] table, for the tests of the feedback levels
(tests/kit/unit/ and sandbox/test_feedback_levels.py)."""

import re

from grader import course as config
from tests.kit.conftest import ROOT


def _course(tmp_path, reveal: str | None, extra: str = "") -> config.Path:
    """The kit's course.toml where it can be read from elsewhere, with a [feedback] table."""
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    if reveal is not None:
        text += f'\n[feedback]\nreveal = "{reveal}"\n{extra}'
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path
