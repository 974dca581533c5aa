"""The README's set-up block, line by line (tests/kit/unit/ and container/test_readme_fresh.py)."""

import re

from tests.kit.conftest import ROOT


def setup_lines() -> list[str]:
    """The README's set-up, line by line: the first bash block under "## Set up"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set up"):]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None, "README.md's Set up has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]
