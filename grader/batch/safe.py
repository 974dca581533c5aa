"""Hostile text made inert: what a student names their folder, or what their code raises, is shown
to the instructor as text, never run by a spreadsheet or a terminal.

A student's name and a submission's messages reach the instructor's terminal, summary.txt,
grades.csv, changes.csv, Gradescope's output and the HTML pages. Two things in them can act:
- control characters (ESC starts a terminal escape sequence that recolours, moves the cursor or
  retitles the window; CR overwrites a line; bidirectional overrides reorder what is shown);
  `inert` writes each as its escape, visible (`\\x1b`), as Python's repr would;
- a CSV cell that starts with `=`, `+`, `-`, `@`, tab or CR is read as a formula by Excel,
  LibreOffice and Google Sheets (OWASP's "CSV injection"); `cell` puts a `'` before it, which
  the spreadsheets show as the text itself.
Rich markup is the third (`[bold]` in a progress bar): callers pass names as rich Text, never as a
markup string.
"""

from __future__ import annotations

import unicodedata

# bidirectional controls: they reorder the characters shown after them (Trojan Source)
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def inert(text: str, *, keep: str = "") -> str:
    """`text` with every control character (but those in `keep`) written as its visible escape."""
    if text.isprintable() and not BIDI.intersection(text):
        return text  # the common case, at C speed
    out = []
    for c in text:
        if c in keep or not (c in BIDI or unicodedata.category(c) == "Cc"):
            out.append(c)
        elif c in NAMED:
            out.append(NAMED[c])
        else:
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
    return "".join(out)


def cell(text: str) -> str:
    """A CSV cell of text a student chose: inert, and never read as a formula by a spreadsheet."""
    text = inert(text)
    return "'" + text if text.startswith(FORMULA) else text
