"""The complete fix of a one-line bug of the course's table: the smallest whole expression of the
reference's file that holds the bug's change, as the reference writes it. Put in place of what the bug
made of it (the same expression with the change made), it gives the reference's line back, so a
report's "Should be" is code to paste, not a fragment ("x.var(dim=-1, unbiased=False)" dropped the
keepdim=True that the line needs). `grade expected` stores it in bugs.json ("expression")."""

from __future__ import annotations

import ast


def complete(source: str, old: str, new: str) -> str:
    """The smallest expression (else statement) on one line of `source` that holds `old`, the bug's
    change to it being `old` -> `new`; "" where the change spans lines, occurs more than once, or lies
    in no such node."""
    if "\n" in old or "\n" in new or source.count(old) != 1 or not old.strip():
        return ""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    at, end = source.index(old), source.index(old) + len(old)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    found: list[tuple[int, int, int]] = []  # (statement last, length, start) of the nodes holding the change
    for node in ast.walk(tree):
        if not isinstance(node, (ast.expr, ast.stmt)) or node.end_lineno != node.lineno or node.end_col_offset is None:
            continue
        line = lines[node.lineno - 1]
        if not line.isascii():  # offsets are of UTF-8 bytes
            continue
        first, last = starts[node.lineno - 1] + node.col_offset, starts[node.lineno - 1] + node.end_col_offset
        if first <= at and end <= last:
            found.append((isinstance(node, ast.stmt), last - first, first))
    if not found:
        return ""
    _, length, first = min(found)
    fix = source[first:first + length]
    # put in place of what the bug made of it, it must give the reference back: one place to put it
    bugged, mutant = fix.replace(old, new, 1), source.replace(old, new, 1)
    return fix if bugged and mutant.count(bugged) == 1 and mutant.replace(bugged, fix, 1) == source else ""
