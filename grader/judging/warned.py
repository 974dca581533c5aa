"""The warnings the submission's code raised while it was graded (PyTorch's own among them: a scheduler
stepped before the optimizer, a tensor copied with torch.tensor), found in what the worker printed, in
passing checks too: data ({"check", "file", "line", "category", "message"}) that grader.words
words, one line each.

Python's warnings module writes `path:line: Category: message` and then the code line; that format is
read, not the kit's own words. The submission's process can print such a line itself: it then shows a
warning in its own report, which it could have printed anyway (the text is shown inert)."""

from __future__ import annotations

import re

from grader.results import Report

# path:line: SomeWarning: text (the staged submission's absolute path; shown from its assignment folder on)
_WARNING = re.compile(r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+): (?P<category>[A-Za-z_]*Warning): (?P<message>.+)$",
                      re.MULTILINE)
_FROM = re.compile(r"^.*?/(?=assignment\d+/)")  # the staging folder before the assignment's folder
MAX_WARNINGS, MAX_MESSAGE = 5, 300


def found(report: Report) -> list[dict]:
    """The distinct warnings of the report's checks, in the order the checks ran (the first check to
    show each), at most MAX_WARNINGS."""
    seen: dict[tuple[str, str], dict] = {}
    for c in report.components:
        for t in c.checks:
            for m in _WARNING.finditer(t.outcome.output or ""):
                file = _FROM.sub("", m["file"])
                key = (m["category"], m["message"])
                if key not in seen:
                    seen[key] = {"check": t.id, "component": c.name, "file": file[:MAX_MESSAGE],
                                 "line": int(m["line"][:9]), "category": m["category"],
                                 "message": m["message"][:MAX_MESSAGE]}
    return list(seen.values())[:MAX_WARNINGS]
