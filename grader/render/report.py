"""The terminal report, drawn with rich. Anything the submission produced is shown as plain text."""

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader import trim, words
from grader.findings import Found
from grader.judging import telling, warned
from grader.measured import Performance, Timing
from grader.render import layout, review
from grader.results import (
    NOT_COUNTED,
    CheckResult,
    ComponentResult,
    ComponentStatus,
    Drawn,
    Reason,
    Report,
    Status,
    Tier,
)
from grader.reveal import Reveal

STYLES = layout.STYLES
ELIDE_LINES = 6  # of a value (a tensor's rows) shown without --verbose
MESSAGE_ROWS = 4  # of a check's message without --verbose (the course's are 2 at most; names and frames fill more)
# the same where two components or more fail, the line that says how many more follows (two failing
# components fit 45 lines at 100 columns, the isolation line included)
TIGHT_LINES = 1
# "basis": what the check compared with, where that is built from the submission's own output
_LABELS = {"basis": "compared with", "drawn": "inputs"}


def plain(text: str, limit: int = 2000) -> Text:
    """Untrusted text, made inert: control characters (ANSI escapes among them) and direction overrides
    shown as \\x.. and \\u...., no markup."""
    text = trim.CONTROL.sub(trim.escaped, str(text))
    if len(text) > limit:
        text = text[:limit] + f" ... ({len(text) - limit} more characters)"
    return Text(text)


def _details(t: CheckResult, verbose: bool = True, hint: bool = True, tight: bool = False,
             named: bool = False, check: str = "") -> Table:
    """`tight`: several components fail, each panel gets a share of the one screen (values cut to
    TIGHT_LINES lines; the largest error's size and place, which --verbose shows, left out). `check`: the
    check's name, shown in the first row where the panel's title has no room for it."""
    o = t.outcome
    rows = Table.grid(padding=(0, 1))
    rows.add_column(style="bold", no_wrap=True)
    rows.add_column()
    # the submission's text (a message, frames, names) gets a value's share of rows; --verbose shows all
    if check:  # the check's name, where the panel's title is too narrow for it
        rows.add_row("check", Text(check, overflow="fold"))
    rows.add_row("message", plain(o.message if verbose else trim.rows(o.message, MESSAGE_ROWS)))
    if t.attribution:
        rows.add_row("parts", plain(words.note(t.attribution)))
    d = o.details
    shown = d.shown()
    if d.pattern:
        shown["pattern"] = words.pattern(d.pattern) if words.pattern_shown(d.pattern, tight) else None
    if d.drawn:
        shown["drawn"] = words.drawn(d.drawn)
    if not (hint and words.hint_fits(d.pattern)):  # else the pattern says what failed, and the causes go
        shown["hint"] = None
    for key in ("expected", "got", "basis", "looks_like", "max_abs_error", "where", "pattern", "drawn", "example",
                "hint"):
        if (value := shown.get(key)) is not None:
            text = f"{value:.3g}" if isinstance(value, float) else str(value)
            if tight and (key == "max_abs_error" or key == "where" and text.startswith("largest error at")):
                continue
            if key == "max_abs_error" and not verbose:  # the largest error's expected and got are in "where"
                continue
            # a diagnosis names the bug: an exception's traceback (where) is cut to its first frames
            lines = TIGHT_LINES if tight else 3 if named and key == "where" else ELIDE_LINES
            cut = trim.example(text, lines, tight) if key == "example" else trim.elided(text, lines)
            # the course's words (hint, pattern, drawn) as they are; what the submission's text can fill, to rows
            cut = cut if key in ("example", "hint", "pattern", "drawn") else trim.rows(cut, ELIDE_LINES)
            rows.add_row(_LABELS.get(key, key.replace("_", " ")), plain(text if verbose else cut))
    if o.output:
        rows.add_row("your output", plain(o.output if verbose else trim.elided(o.output)))
    return rows


def _excused(checks: list[CheckResult]) -> Panel:
    """Failures that come from the parts: one line each, not the red panels of a real failure."""
    parts = sorted({p for t in checks for p in t.excused_by})
    names = " and ".join(parts)
    ids = Text(", ".join(t.id + (" (hidden)" if t.tier == Tier.HIDDEN else "") for t in checks), style="dim")
    return Panel(Group(Text(f"Not counted here: with the reference's {names} in place of yours these checks pass. "
                            f"Fix your {names}; these failures should go with it.", style="cyan"), ids),
                 title=Text.assemble(("excused", "cyan"), f"  {len(checks)} check{'s' * (len(checks) > 1)}"),
                 title_align="left", border_style="cyan")


def _found(c: ComponentResult) -> list[Panel]:
    """What grader.judging.forbidden found: a hit that scored the component 0; flags, which hold its points at 0
    for the instructor's review (`held`) or, where the course counts them, cost nothing (grader.render.review)."""
    panels = []
    for found, head, style, title in ((c.forbidden, review.FORBIDDEN, "red", "forbidden"),
                                      (c.flagged, review.flagged(c.held), "yellow",
                                       "flagged" if c.held is None else "held for review")):
        if found:
            lines = plain("\n".join(f"- {review.finding(f)}" for f in found))
            panels.append(Panel(Group(Text(head, style=style), lines), border_style=style, title_align="left",
                                title=Text(title, style=style)))
    return panels


def _also(others: list[CheckResult], explained, tight: bool) -> Text:
    """The failures not shown in full, each named: those the diagnosis accounts for (`explained`: public
    checks) as the same bug, the other public ones as not explained by it, the hidden ones apart (the
    diagnosis reads the public checks only)."""
    same = [t.id for t in others if t.id in explained]
    afresh = tuple(t.id for t in others if t.id not in explained and t.tier != Tier.HIDDEN
                   and t.outcome.details.drawn == Drawn.AFRESH)
    rest = [t.id for t in others if t.id not in explained and t.tier != Tier.HIDDEN and t.id not in afresh]
    hidden = [t.id for t in others if t.id not in explained and t.tier == Tier.HIDDEN]
    return Text(words.also(same, rest, hidden, diagnosed=bool(explained), tight=tight, afresh=afresh), style="dim")


def _component_panel(c: ComponentResult, verbose: bool, tight: bool = False, reveal: Reveal = Reveal.FIX,
                     width: int = 100) -> Panel:
    title = layout.title(c, width)
    if c.status == ComponentStatus.NOT_ATTEMPTED:
        return Panel(Text(f"Not attempted: every check raised NotImplementedError. Start in {c.file}.", style="dim"),
                     title=title, title_align="left", border_style="dim")
    failing = [t for t in c.checks if t.outcome.status != Status.PASSED]
    if c.checks and all(t.outcome.reason == Reason.MISSING_FILE for t in failing) \
            and any(t.outcome.reason == Reason.MISSING_FILE for t in c.checks):
        return Panel(Text(next(t.outcome.message for t in c.checks if t.outcome.reason == Reason.MISSING_FILE)
                          + f" (every check of {c.name} needs it)."), title=title, title_align="left",
                     border_style=STYLES.get(c.status, ""))
    panels: list = _found(c)
    said = words.diagnosis(c.diagnosis, reveal)
    if said:
        panels.append(Text.assemble(("Diagnosis: ", "bold"), plain(said)))
    failed = [t for t in c.checks if t.outcome.status != Status.PASSED and t.outcome.reason not in NOT_COUNTED
              and not t.excused_by and not t.waiting_on]
    # one screen: the check that shows the bug best in full, the others by name (--verbose: all in full);
    # grading chose it from the bug table (grader.judging.telling); a report without it is ranked there too
    best = next((t for t in failed if t.id == c.telling), None) or telling.best(c, {})
    shown = failed if verbose or not best else [best]
    for t in shown:
        tier = " (hidden)" if t.tier == Tier.HIDDEN else ""
        # a diagnosis says the cause: the check's list of likely ones is for --verbose
        # ("looks like" says what the values are, not why: the hint stays)
        forensic = c.diagnosis is not None and c.diagnosis.kind in (Found.LOOKS_LIKE, Found.NAMES)
        # the check's name in the title where it fits whole (a nested panel: the outer one's borders too),
        # else in the panel's first row: a name cut short names no check
        whole = len(f"{t.outcome.status}  {t.id}{tier}") <= width - 10
        details = _details(t, verbose, hint=verbose or not said or forensic, tight=tight,
                           named=bool(said), check="" if whole else t.id + tier)
        panels.append(Panel(details, title=Text.assemble(layout.status(t.outcome.status), f"  {t.id}{tier}" * whole),
                            title_align="left", border_style=STYLES.get(t.outcome.status, "")))
    others = [t for t in failed if t not in shown]
    if others:
        panels.append(_also(others, c.diagnosis.explains if c.diagnosis and said else (), tight))
    excused = [t for t in c.checks if t.excused_by and t.outcome.status != Status.PASSED]
    if excused:
        panels.append(_excused(excused) if verbose else _excused_line(excused))
    waiting = [t for t in c.checks if t.waiting_on and t.outcome.status != Status.PASSED]
    if waiting:
        panels.append(_waiting_line(waiting, verbose))
    return Panel(Group(*panels), title=title, title_align="left", border_style=STYLES.get(c.status, ""))


def _folded(components: list[ComponentResult], report: Report) -> Text:
    said = []
    for c in components:
        excused = [t for t in c.checks if t.excused_by and t.outcome.status != Status.PASSED]
        parts = " and ".join(layout.excused_on(c, report.components))
        said.append(f"{c.name} ({len(excused)} excused: fix your {parts})")
    # not "full marks": the parts these checks run through do not work yet
    return Text(f"No points lost for checks that pass with the reference's parts (grade --verbose lists "
                f"them): {'; '.join(said)}.", style="cyan")


def _waiting_line(checks: list[CheckResult], verbose: bool = False) -> Text:
    """Failures that may come from failing parts, with no reference here to tell: credited for now,
    graded again once the parts pass."""
    parts = " and ".join(dict.fromkeys(p for t in checks for p in t.waiting_on))
    n, one = len(checks), " and " not in parts
    ids = f" ({', '.join(t.id for t in checks)})" if verbose else ""
    return Text(f"Waiting on your {parts}: {n} check{'s' * (n > 1)}{ids} here fail{'s' * (n == 1)} and run"
                f"{'s' * (n == 1)} through {'it' if one else 'them'}, which fail{'s' * one} "
                f"{'its' if one else 'their'} own checks. {words.for_now(parts, one, n)}", style="blue")


def _waiting_footer(report: Report, waiting: list[ComponentResult]) -> Text:
    """The components that wait, their points for now and what becomes of them: the row's and the
    total's "for now" in words."""
    parts = list(dict.fromkeys(p for c in waiting for p in c.waiting_on))
    names = " and ".join(parts)
    said = ", ".join(c.name for c in waiting)
    return Text(f"Waiting: {report.provisional:g} points of the total are for checks of {said} that fail while "
                f"running through your {names}, which fail{'s' * (len(parts) == 1)} "
                f"{'its' if len(parts) == 1 else 'their'} own checks (grade --verbose lists them). "
                + words.for_now(names, len(parts) == 1), style="blue")


def _excused_line(checks: list[CheckResult]) -> Text:
    names = " and ".join(sorted({p for t in checks for p in t.excused_by}))
    n = len(checks)
    it = "them" if " and " in names else "it"
    return Text(f"Fix your {names}: {n} check{'s' * (n > 1)} here fail{'s' * (n == 1)} with {it} and pass with the "
                f"reference's (excused, not counted here; grade --verbose lists {'them' if n > 1 else 'it'}).",
                style="cyan")


def _speed(performance: Performance) -> Table:
    """Timings as ratios to torch's built-ins and to the reference: below 1 is faster, above is slower."""
    how = "informational" if performance.informational else \
        f"{performance.score:g} / {performance.max_score:g} points, within {performance.max_ratio:g}x"
    table = Table(title=f"performance, forward + backward: yours / theirs ({how})", expand=False,
                  box=box.SIMPLE_HEAD, caption="torch: its built-in; ref: the reference; measured in your process "
                  "(one thread on the CPU); below 1 is faster or smaller")
    table.add_column("component")
    table.add_column("on", no_wrap=True)
    for name in ("time/torch", "time/ref", "mem/torch"):
        table.add_column(name, justify="right", no_wrap=True)
    for e in performance.entries:
        if e.status != Timing.MEASURED:  # an error's message is in the checks that ran the same code
            table.add_row(Text(f"{e.component}: {e.status}"), e.device, "-", "-", "-")
            continue
        table.add_row(e.component, e.device,
                      *(f"{ratio:.2f}x" if ratio is not None else "-"
                        for ratio in (e.time_vs_torch, e.time_vs_reference, e.memory_vs_torch)))
    return table


def render(report: Report, console: Console, verbose: bool = False) -> None:
    """The report; without `verbose`, each failing component shows one failed check in full (the
    most telling) and names the others, and long values are cut to ELIDE_LINES lines."""
    header = Table.grid(padding=(0, 2))
    header.add_column(style="bold")
    header.add_column()
    if verbose:
        header.add_row("assignment", f"{report.assignment}: {report.title}")
    header.add_row("submission", plain(str(report.submission)))
    header.add_row("score", f"{report.score:g} / {report.max_score:g}, graded in {report.duration:.1f} s")
    if report.isolation:  # the tier and what it keeps from the code: where it runs, it may be less than it seems
        header.add_row("isolation", plain(report.isolation_detail or report.isolation))
    # the summary's title names the assignment: one screen has no room for the same line twice
    console.print(Panel(header, title="grade", title_align="left") if verbose else header)
    console.print(layout.summary(report))
    failing = sum(c.status not in (ComponentStatus.PASSED, ComponentStatus.EXCUSED) for c in report.components)
    weights = words.weighed(layout.weighed(report))
    if weights and (verbose or failing <= 1):  # "4 / 8 checks" read as half the points otherwise; one screen
        console.print(Text(weights, style="dim"))  # for two panels or more (the README says the rule)
    shown = [c for c in report.components if c.status != ComponentStatus.PASSED or c.flagged]
    # one screen: components that lose nothing, their failures all excused by failing parts, in one line
    folded = [] if verbose else [c for c in shown if c.status == ComponentStatus.EXCUSED and not c.flagged]
    # components whose failures all wait for failing parts: one line, the parts come first
    waiting = [] if verbose else [c for c in shown if c.status == ComponentStatus.WAITING and not c.flagged]
    full = [c for c in shown if c not in folded and c not in waiting]
    for c in full:
        console.print(_component_panel(c, verbose, tight=len(full) > 1 and not verbose, reveal=report.reveal,
                                       width=console.width))
    if folded:
        console.print(_folded(folded, report))
    if waiting:
        console.print(_waiting_footer(report, waiting))
    # informational timings are for --verbose: the report's one screen is for what costs points
    if report.performance and (verbose or not report.performance.informational):
        console.print(_speed(report.performance))
    for note in report.notes:
        console.print(plain(words.noted(note)), style="dim")
    for found in warned.found(report):  # PyTorch's own among them: one line each, in passing checks too
        console.print(plain(words.warning(found)), style="yellow")
    first, start = report.start_here(), report.start_at()
    if start is not None and (first is None or start["name"] != first.name):
        # a part of an earlier assignment fails its own checks: everything here that runs through it waits
        if first is None:  # every failure here excused or waiting: not "Full marks" while the model fails
            console.print(Text(words.not_working(start["name"], start["file"], report.student), style="bold yellow"))
        head = Text.assemble(("Start here: ", "bold"), (start["name"], "bold red"), f" in {start['file']}")
        own = f"(fails its own {'public ' * report.student}checks)"
        console.print(layout.unbroken(console.width, head, Text(own, style="red")))
    elif first is None:
        console.print(Text(f"All checks passed: {report.score:g} / {report.max_score:g}.", style="bold green")
                      if all(c.status == ComponentStatus.PASSED for c in report.components) else
                      Text(f"Full marks: {report.score:g} / {report.max_score:g}.", style="bold green"))
    else:
        head = Text.assemble(("Start here: ", "bold"), (first.name, "bold red"), f" in {first.file}")
        tail = Text(f"({first.status})", style=STYLES.get(first.status, ""))
        console.print(layout.unbroken(console.width, head, tail))

