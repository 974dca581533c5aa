"""The docs' pages that show a report, the trees they show, and their blocks that draw a panel
(tests/kit/unit/ and sandbox/test_shown_reports.py)."""

import re

# page -> the trees its report blocks show: classic bugs of the table or of the held-out set
SHOWN = {"docs/explanation/diagnosis.md": ("layer_norm_eps_outside_sqrt",
                                          "emb_scaled_by_d_model_root_written_as_power")}
PANEL = "╭─ "


def blocks(text: str) -> list[list[str]]:
    """The text blocks of `text` that draw a report's panel, as lines without trailing spaces."""
    found = re.findall(r"```text\n(.*?)```", text, re.S)
    return [[line.rstrip() for line in block.splitlines()] for block in found if PANEL in block]
