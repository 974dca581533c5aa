"""The terminal report, drawn with rich. Anything the submission produced is shown as plain text."""

import re

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.results import ComponentResult, Report

STYLES = {"passed": "green", "partial": "yellow", "failed": "red", "not attempted": "dim", "error": "red",
          "timeout": "magenta", "skipped": "dim"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str, limit: int = 2000) -> Text:
    """Untrusted text, made inert: control characters (ANSI escapes among them) shown as \\x.., no markup."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    if len(text) > limit:
        text = text[:limit] + f" ... ({len(text) - limit} more characters)"
    return Text(text)


def _status(status: str) -> Text:
    return Text(status, style=STYLES.get(status, ""))


def _summary(report: Report) -> Table:
    table = Table(title=f"{report.assignment}: {report.title}", expand=False)
    table.add_column("component", no_wrap=True)
    table.add_column("file", style="dim", no_wrap=True, min_width=12)
    table.add_column("points", justify="right")
    table.add_column("checks", justify="right")
    table.add_column("status")
    for c in report.components:
        passed = sum(t.outcome.status == "passed" for t in c.counted)
        table.add_row(c.name, c.file.rpartition("/")[2], f"{c.score:g} / {c.max_score:g}", f"{passed} / {len(c.counted)}",
                      _status(c.status))
    table.add_section()
    table.add_row(Text("total", style="bold"), "", Text(f"{report.score:g} / {report.max_score:g}", style="bold"),
                  "", "")
    return table


def _component_panel(report: Report, c: ComponentResult) -> Panel:
    parts = []
    blockers = report.failing_dependencies(c)
    if blockers:
        names = " and ".join(blockers)
        parts.append(Text(f"{c.name} builds on {names}, which {'does' if len(blockers) == 1 else 'do'} not pass yet: "
                          f"fix {'that' if len(blockers) == 1 else 'those'} first; some failures below may come "
                          f"from {'it' if len(blockers) == 1 else 'them'}.", style="yellow"))
    if c.status == "not attempted":
        parts.append(Text(f"Not attempted: every check raised NotImplementedError. Start in {c.file}.",
                          style="dim"))
        return Panel(Group(*parts), title=f"{c.name}", border_style="dim")
    for t in c.checks:
        o = t.outcome
        if o.status == "passed" or o.reason in ("unavailable", "no_cuda"):
            continue
        rows = Table.grid(padding=(0, 1))
        rows.add_column(style="bold", no_wrap=True)
        rows.add_column()
        rows.add_row("message", plain(o.message))
        for key in ("expected", "got", "max_abs_error", "where", "example", "hint"):
            if key in o.details:
                value = o.details[key]
                rows.add_row(key.replace("_", " "), plain(f"{value:.3g}" if isinstance(value, float) else value))
        if o.output:
            rows.add_row("your output", plain(o.output))
        tier = " (hidden)" if t.tier == "hidden" else ""
        parts.append(Panel(rows, title=Text.assemble(_status(o.status), f"  {t.id}{tier}"), title_align="left",
                           border_style=STYLES.get(o.status, "")))
    return Panel(Group(*parts), title=f"{c.name}: {c.score:g} / {c.max_score:g}", title_align="left",
                 border_style=STYLES.get(c.status, ""))


def render(report: Report, console: Console) -> None:
    header = Table.grid(padding=(0, 2))
    header.add_column(style="bold")
    header.add_column()
    header.add_row("assignment", f"{report.assignment}: {report.title}")
    header.add_row("submission", plain(str(report.submission)))
    header.add_row("score", f"{report.score:g} / {report.max_score:g}")
    header.add_row("duration", f"{report.duration:.1f} s")
    console.print(Panel(header, title="grade", title_align="left"))
    console.print(_summary(report))
    for c in report.components:
        if c.status != "passed" or any(t.outcome.reason == "dependency" for t in c.checks):
            console.print(_component_panel(report, c))
    for note in report.notes:
        console.print(plain(note), style="dim")
    first = report.start_here()
    if first is None:
        console.print(Text(f"All checks passed: {report.score:g} / {report.max_score:g}.", style="bold green"))
    else:
        console.print(Text.assemble(("Start here: ", "bold"), (first.name, "bold red"), f" in {first.file} ",
                                    (f"({first.status})", STYLES.get(first.status, ""))))
