"""Text cut and made inert for showing: the submission's own text (its names, messages, frames, printing)
with its control characters escaped, values cut to a panel's share of rows. Standard library only
(grader.results bounds its JSON with `inert`); the words of findings are grader.words'."""

from __future__ import annotations

import re
import unicodedata

# C0 but tab and newline, DEL, C1 (0x9b is a terminal's one-byte CSI): what makes text act on a terminal;
# and the direction marks, overrides and isolates (Trojan Source), which make text read other than it is
# (in a terminal, a page or a spreadsheet). The one list of them for every reader: the report, the JSON,
# a batch's files and its progress (grader.batch.safe), Gradescope's output.
_DIRECTION = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_DIRECTION}]")
_LINE_BREAK = re.compile(f"[\x00-\x1f\x7f-\x9f{_DIRECTION}]")  # a line's: \n, \t too
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}  # as Python's repr writes them


def escaped(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def inert(text: str, limit: int | None = None, *, line: bool = False) -> str:
    """Text the submission made (its names, messages, frames), made inert wherever it is shown: control
    characters written as \\x.. (ANSI escapes among them; newlines and tabs too where `line`: a frame is
    one line), cut to `limit` characters with a note of how many more. Cut before the escape too, so
    that megabytes cost no more than the limit."""
    text = str(text)
    more = len(text) - limit if limit is not None and len(text) > limit else 0
    text = text[:limit] if more else text
    text = (_LINE_BREAK if line else CONTROL).sub(escaped, text)
    if more:
        text = text[:limit] + f" ... ({more} more characters)"
    return text


def elided(text: str, lines: int = 6) -> str:
    """At most `lines` lines (a tensor's rows beyond them are left to --verbose)."""
    kept = text.splitlines()
    if len(kept) <= lines:
        return text
    return "\n".join([*kept[:lines], f"... ({len(kept) - lines} more lines: grade --verbose shows them)"])


ROW_CHARS = 80  # of a value's line per terminal row: the value column of a panel at 100 columns is wider


_WORD = re.compile(r"\s*\S+\s*")  # a word with the spaces around it, as rich wraps words


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _folded(word: str, width: int) -> tuple[int, int]:
    """Rows a word too long for one takes, folded as rich folds it (cells.chop_cells: a wide character
    that does not fit the row's end starts the next), and the cells of its last row."""
    count, used = 1, 0
    for c in word:
        cells = _cells(c)
        if used + cells > width:
            count, used = count + 1, 0
        used += cells
    return count, used


def _rows(line: str, width: int) -> int:
    """Terminal rows a line takes in a column of `width` cells, wrapped as rich wraps it (rich._wrap's
    divide_line: at spaces; a word too long for any row starts one of its own and is folded)."""
    count, offset = 1, 0
    for word in _WORD.finditer(line):
        length = _cells(word.group().rstrip())
        if width - offset >= length:
            offset += _cells(word.group())
        elif length > width:
            folded, offset = _folded(word.group(), width)
            count += folded - (0 if word.start() else 1)
        elif offset and word.start():
            count += 1
            offset = _cells(word.group())
    return count


def rows(text: str, lines: int, width: int = ROW_CHARS) -> str:
    """At most `lines` terminal rows of `width` characters (a long line takes several), the note of
    what is cut among them: a value of the submission's own text (a message, frames, names) that is
    one long line takes a panel's share of the screen, no more; the rest is for --verbose. Counted as
    shown: a control character takes the characters of its escape. elided()'s own last line ("... (3
    more lines ...") may come past the rows."""
    out: list[str] = []
    used = 0
    kept = CONTROL.sub(escaped, text).splitlines()
    for i, line in enumerate(kept):
        need = _rows(line, width)
        if used + need <= lines or i == len(kept) - 1 and line.startswith("... (") and need == 1:
            out.append(line)
            used += need
            continue
        room = lines - used
        if room < 1 and out:  # no row left for the note: it takes the last line's
            line = out.pop()
            room = _rows(line, width)
        low, high = 0, len(line)  # the longest start of the line that fits the rows left, with the note
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if _rows(line[:mid] + _CUT, width) <= max(room, 1) else (low, mid - 1)
        out.append(line[:low] + _CUT)
        break
    return "\n".join(out)


_CUT = " ... (grade --verbose shows all of it)"


def example(text: str, lines: int, tight: bool = False) -> str:
    """An example cut to about `lines` lines without losing an input: each input (a line that starts at
    the margin, grader.suite.checks.describe) keeps its first line, so that the mask after a long x shows;
    lines to spare (at least 2 where not tight) go to the masks first, then to the inputs in order."""
    kept = text.splitlines()
    if len(kept) <= lines:
        return text
    starts = [i for i, line in enumerate(kept) if line[:1] not in (" ", "")]
    if len(starts) <= 1 or len(starts) > max(lines, 2) and not tight:  # not inputs of a few lines each
        return elided(text, lines)
    entries = [kept[i:end] for i, end in zip(starts, [*starts[1:], len(kept)], strict=True)]
    masks = [e for e in entries if "mask" in e[0].partition(":")[0].partition("=")[0]]
    if tight:  # one screen for several panels: the mask is the input that matters
        shown = [e[0] for e in masks] or kept[:lines]
        return "\n".join([*shown, f"... ({len(kept) - len(shown)} more lines: grade --verbose shows them)"])
    spare = max(2, lines - len(entries))
    take = {id(e): 1 for e in entries}
    for e in sorted(entries, key=lambda e: e not in masks):  # masks first, then in order
        more = min(spare, len(e) - 1)
        take[id(e)] += more
        spare -= more
    out = [line for e in entries for line in e[:take[id(e)]]]
    if len(out) == len(kept):
        return text
    return "\n".join([*out, f"... ({len(kept) - len(out)} more lines: grade --verbose shows them)"])
