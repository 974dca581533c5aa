"""Hostile text made inert: what a student names their folder, or what their code raises, is shown
to the instructor as text, never run by a spreadsheet or a terminal.

A student's name and a submission's messages reach the instructor's terminal, summary.txt,
grades.csv, changes.csv, Gradescope's output and the HTML pages. Two things in them can act:
- control characters (ESC starts a terminal escape sequence that recolours, moves the cursor or
  retitles the window; CR overwrites a line; bidirectional overrides reorder what is shown);
  `inert` writes each as its escape, visible (`\\x1b`), as Python's repr would (grader.trim's);
- a CSV cell that starts with `=`, `+`, `-`, `@`, tab or CR is read as a formula by Excel,
  LibreOffice and Google Sheets (OWASP's "CSV injection"); `cell` puts a `'` before it, which
  the spreadsheets show as the text itself.
Rich markup is the third (`[bold]` in a progress bar): callers pass names as rich Text, never as a
markup string.
"""

from __future__ import annotations

from grader import trim

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def inert(text: str, *, lines: bool = False) -> str:
    """`text` with every control character and direction mark written as its visible escape (grader.trim's
    list, one for every reader); `lines`: newlines and tabs kept, for an output of several lines."""
    return trim.inert(text, line=not lines)


def cell(text: str) -> str:
    """A CSV cell of text a student chose: inert, and never read as a formula by a spreadsheet."""
    text = inert(text)
    return "'" + text if text.startswith(FORMULA) else text
