"""What makes the report whole at any width from 50 columns: the table (its points never cut), a panel's
title (it keeps the file), a line that must not break inside its parentheses."""

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader import words
from grader.results import ComponentResult, ComponentStatus, Report, Status

STYLES: dict[str, str] = {
    ComponentStatus.PASSED: "green", ComponentStatus.EXCUSED: "cyan", ComponentStatus.WAITING: "blue",
    ComponentStatus.PARTIAL: "yellow", ComponentStatus.FAILED: "red", ComponentStatus.NOT_ATTEMPTED: "dim",
    ComponentStatus.HELD: "yellow",
    Status.ERROR: "red", Status.TIMEOUT: "magenta", Status.SKIPPED: "dim"}


def status(value: str) -> Text:
    return Text(value, style=STYLES.get(value, ""))


def summary(report: Report) -> Table:
    """The table: the points are the figure a student reads first, kept whole at any width from 50 columns
    (no_wrap, at least as wide as the widest); names, counts and statuses wrap rather than lose letters."""
    rows = []
    for c in report.components:
        passed = sum(t.outcome.status == Status.PASSED for t in c.counted)
        excused = sum(t.outcome.status != Status.PASSED and t.earned and not t.waiting_on for t in c.counted)
        waiting = sum(t.outcome.status != Status.PASSED and bool(t.waiting_on) for t in c.counted)
        checks = f"{passed} / {len(c.counted)}" + (f" (+{excused} excused)" if excused else "") \
            + (f" (+{waiting} waiting)" if waiting else "")
        # waiting points are in the score, credited for now: the row says how many
        # excused and waiting points count: the row says on which parts, and how many are for now
        parts = excused_on(c, report.components) if c.status == ComponentStatus.EXCUSED else list(c.waiting_on)
        said = Text(words.standing(c.status, parts, c.provisional),
                    style=STYLES[ComponentStatus.WAITING] if c.provisional else STYLES.get(c.status, ""))
        rows.append((c.name, f"{c.score:g} / {c.max_score:g}", checks, said))
    total = f"{report.score:g} / {report.max_score:g}"
    table = Table(title=f"{report.assignment}: {report.title}", expand=False)
    table.add_column("component", overflow="fold")
    table.add_column("points", justify="right", no_wrap=True,
                     min_width=max(len(total), *(len(r[1]) for r in rows)) if rows else len(total))
    table.add_column("checks passed", justify="right", overflow="fold")
    # a status wraps between its words, never inside one ("not attempted" is two lines, not "not att…")
    table.add_column("status", overflow="fold",
                     min_width=max([len("status"), *(len(w) + 1 for c in report.components
                                                     for w in str(c.status).split())]))
    for row in rows:
        table.add_row(*row)
    table.add_section()
    blue = STYLES[ComponentStatus.WAITING]
    now = Text(f"{report.provisional:g} pts of it for now", style=blue) if report.provisional else ""
    table.add_row(Text("total", style="bold"), Text(total, style="bold"), "", now)
    return table


def _excused_by(c: ComponentResult) -> list[str]:
    return sorted({p for t in c.counted if t.outcome.status != Status.PASSED for p in t.excused_by})


def excused_on(c: ComponentResult, components: list[ComponentResult]) -> list[str]:
    """The failing parts `c`'s excused checks come from, followed down through parts that are themselves
    only excused here (an EncoderLayer excused on a ResidualConnection excused on LayerNorm: LayerNorm)."""
    by = {x.name: x for x in components}
    found: list[str] = []
    todo, seen = _excused_by(c), set()
    while todo:
        part = todo.pop(0)
        if part in seen:
            continue
        seen.add(part)
        if part in by and by[part].status == ComponentStatus.EXCUSED:
            todo += _excused_by(by[part])
        else:
            found.append(part)
    return sorted(found)


def weighed(report: Report) -> list[dict]:
    """The components whose points differ from their count of checks passed (their checks weigh
    differently): what words.weighed says under the table."""
    found = []
    for c in report.components:
        counted = c.counted
        earned, total = sum(t.weight for t in counted if t.earned), sum(t.weight for t in counted)
        passed = sum(t.earned for t in counted)
        if total and counted and passed < len(counted) and not c.forbidden \
                and abs(earned / total - passed / len(counted)) > 1e-9:
            found.append({"component": c.name, "passed": passed, "checks": len(counted), "earned": earned,
                          "total": total})
    return found


def title(c: ComponentResult, width: int) -> str:
    """A component panel's title, whole at `width` columns: it keeps the file to open, and gives up the
    assignment's folder, then the points (the table has them) before it would be cut."""
    base = c.file.rpartition("/")[2]
    points = f"{c.score:g} / {c.max_score:g}"
    room = width - 6  # the panel's corners and the spaces around its title
    said = (f"{c.name}: {points}  ({c.file})", f"{c.name}: {points}  ({base})", f"{c.name}  ({base})",
            f"{c.name} ({base})")
    return next((t for t in said if len(t) <= room), base)


def unbroken(width: int, head: Text, tail: Text) -> Text:
    """`head` then `tail`, where a line break may fall in `head` or between them, never inside `tail`
    ("(not attempted)" read as "(not" and "attempted)" on the next line)."""
    last = head.plain.rpartition("\n")[2]
    lines = Text(last).wrap(Console(width=width), width)
    room = width - len(lines[-1].plain.rstrip()) if len(lines) else width
    return Text.assemble(head, " " if room > len(tail.plain) else "\n", tail)
