"""The class at a glance: score histogram, mean per component, the checks most students fail, the
classic bugs most students have (grader.judging.diagnosis), and the submissions whose grade differs most
from what the public tier alone would give."""

from __future__ import annotations

from collections import Counter

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader import words
from grader.batch.outputs import RowStatus
from grader.batch.safe import inert
from grader.course import Assignment
from grader.findings import Found
from grader.render import review
from grader.report_json import Graded, from_json
from grader.results import Reason, Report, Status, Tier

BINS = 10
BAR = 30  # characters of the longest histogram bar
GROUPS = 10  # groups of similar submissions in summary.txt (summary.json and class.html have them all)
FORENSIC = (Found.LOOKS_LIKE, Found.NAMES)  # diagnoses that describe values or names: no bug of the table
GAP = 25.0  # percentage points between the full grade and the public tier's that get a submission listed


def public_score(spec: Assignment, report: dict) -> float:
    """What the public checks alone would give: each component's points in proportion to the
    weight of its public checks earned (the scoring rule of grader.judging.scoring, public tier only)."""
    return _public(spec, from_json(report))


def _public(spec: Assignment, report: Report) -> float:
    weights = {chk.id: chk.weight for comp in spec.components for chk in comp.checks}
    total = 0.0
    for comp in spec.components:
        got = next((c for c in report.components if c.name == comp.name), None)
        tests = [t for t in (got.checks if got else []) if t.tier == Tier.PUBLIC]
        counted = sum(weights.get(t.id, 1.0) for t in tests)
        earned = sum(weights.get(t.id, 1.0) for t in tests if t.outcome.status == Status.PASSED or t.excused_by)
        if counted and not (got and got.forbidden):
            total += comp.points * earned / counted
    return round(total, 2)


def summarise(spec: Assignment, docs: list[tuple[str, Graded]]) -> dict:
    """The summary as data (summary.json); `docs`: (student, its report with its "batch" record, read)."""
    max_score = spec.max_score
    totals = [d.total for _, d in docs]
    histogram = [0] * BINS
    for t in totals:
        histogram[min(int(t / max_score * BINS), BINS - 1) if max_score else 0] += 1
    components = []
    for comp in spec.components:
        got = [next((c.score for c in d.report.components if c.name == comp.name), 0.0) for _, d in docs]
        components.append({"name": comp.name, "max_score": comp.points,
                           "mean": round(sum(got) / len(got), 2) if got else 0.0,
                           "full_marks": sum(g >= comp.points for g in got)})
    gaps = []
    for student, d in docs:
        if d.status not in (RowStatus.GRADED, RowStatus.FAULT) or not max_score:
            continue
        public = _public(spec, d.report)
        if abs(d.total - public) / max_score * 100 >= GAP:
            gaps.append({"student": student, "score": d.total, "public": public})
    flagged, held = _review(docs)
    # the tiers the submissions ran in, and what each kept from them (grader.sandbox.isolation.describe)
    tiers = Counter(d.report.isolation_detail or d.report.isolation for _, d in docs if d.report.isolation)
    return {"assignment": spec.name, "students": len(docs), "max_score": max_score,
            "isolation": [{"tier": tier, "students": n} for tier, n in tiers.most_common()],
            "mean": round(sum(totals) / len(totals), 2) if totals else 0.0,
            "statuses": dict(Counter(d.status for _, d in docs)),
            "histogram": [{"from": round(i * max_score / BINS, 2), "to": round((i + 1) * max_score / BINS, 2),
                           "students": n} for i, n in enumerate(histogram)],
            "components": components, "most_failed": _most_failed(docs), "diagnoses": _diagnoses(docs),
            "public_gap": sorted(gaps, key=lambda g: -abs(g["score"] - g["public"])), "flagged": flagged,
            "held": held}


def _most_failed(docs: list[tuple[str, Graded]]) -> list[dict]:
    """The checks most students fail, each with its most common message's first line."""
    failing: Counter[str] = Counter()
    messages: dict[str, Counter[str]] = {}
    owner = {}
    for _, d in docs:
        for c in d.report.components:
            for t in c.checks:
                owner[t.id] = c.name
                if t.outcome.status != Status.PASSED and not t.excused_by and t.outcome.reason not in (
                        Reason.UNAVAILABLE, Reason.NO_CUDA, Reason.NOT_ATTEMPTED):
                    failing[t.id] += 1
                    messages.setdefault(t.id, Counter())[t.outcome.message.splitlines()[0][:120]
                                                         if t.outcome.message else ""] += 1
    return [{"id": check, "component": owner[check], "students": n, "typical": messages[check].most_common(1)[0][0]}
            for check, n in failing.most_common(8)]


def _diagnoses(docs: list[tuple[str, Graded]]) -> list[dict]:
    """The classic bugs the reports name, most students first."""
    bugs: Counter[tuple[str, str, str]] = Counter()
    for _, d in docs:
        for c in d.report.components:
            # a "looks like" (its kind, data) describes values or names: it names no classic bug of the table
            if c.diagnosis is not None and c.diagnosis.kind not in FORENSIC:
                what = words.what(c.diagnosis) or c.diagnosis.bug
                bugs[(c.name, c.diagnosis.bug, what)] += 1
    return [{"component": comp, "bug": bug, "what": what, "students": n} for (comp, bug, what), n in bugs.most_common()]


def _review(docs: list[tuple[str, Graded]]) -> tuple[list[dict], list[dict]]:
    """(flagged, held): what grader.judging.forbidden found, and every component held for review."""
    # what grader.judging.forbidden flagged for review, and what it scored 0, student by student, with the line
    # (held: its points held at 0 for review, the course's `[policy] flagged = "hold"`; an override releases them)
    flagged = [{"student": student, "component": c.name, "what": f.what, "where": f.where,
                "scored_0": hit, "held": not hit and d.held(c) is not None}
               for student, d in docs for c in d.report.components
               for found, hit in ((c.forbidden, True), (c.flagged, False)) for f in found]
    # every component held for review, with the lines that flagged it (the table lists them all, never cut)
    held = [{"student": student, "component": c.name, "points": points,
             "lines": [{"what": f.what, "where": f.where} for f in c.flagged]}
            for student, d in docs for c in d.report.components if (points := d.held(c)) is not None]
    return flagged, held


def changed_line(summary: dict) -> str:
    """"12 of 30 totals changed since the last run" (the students graded in both runs)."""
    changes = summary["changes"]
    return f"{changes['totals_changed']} of {changes['students']} totals changed since the last run"


def render(summary: dict) -> RenderableType:
    n = summary["students"]
    head = Text.assemble((f"{summary['assignment']}", "bold"), f": {n} submissions, mean ",
                         (f"{summary['mean']:g} / {summary['max_score']:g}", "bold"), "   ",
                         ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())))
    if summary.get("changes"):
        head.append(f"\n{changed_line(summary)} (changes.csv)")
    for tier in summary.get("isolation", []):
        head.append(f"\nisolation: {inert(tier['tier'])} ({tier['students']})")
    hist = Table(title="Total score", title_justify="left", box=None, padding=(0, 1))
    hist.add_column("score", justify="right", no_wrap=True)
    hist.add_column("", no_wrap=True, style="cyan")
    hist.add_column("n", justify="right")
    top = max((b["students"] for b in summary["histogram"]), default=0) or 1
    for b in summary["histogram"]:
        hist.add_row(f"{b['from']:g}–{b['to']:g}", "█" * round(b["students"] / top * BAR), str(b["students"]))
    comps = Table(title="Per component", title_justify="left")
    comps.add_column("component")
    comps.add_column("mean", justify="right")
    comps.add_column("max", justify="right")
    comps.add_column("full marks", justify="right")
    for c in summary["components"]:
        comps.add_row(c["name"], f"{c['mean']:g}", f"{c['max_score']:g}", f"{c['full_marks']}/{n}")
    # copies first: a disguised one must not be pair 68 of 277 below the tables
    parts: list[RenderableType] = [head, *([_similar(summary["similarity"])] if summary.get("similarity") else []),
                                   hist, comps]
    if summary["most_failed"]:
        failed = Table(title="Checks most students fail", title_justify="left")
        failed.add_column("n", justify="right")
        failed.add_column("check, and its typical message")
        for c in summary["most_failed"]:
            # the id on a line of its own, never broken (it is what an instructor searches for)
            failed.add_row(str(c["students"]), Group(Text(c["id"], style="bold", no_wrap=True, overflow="ellipsis"),
                                                     Text(inert(c["typical"]), style="dim")))
        parts.append(failed)
    if summary.get("diagnoses"):
        named = Table(title="Classic bugs named in the reports", title_justify="left")
        named.add_column("n", justify="right")
        named.add_column("component", no_wrap=True)
        named.add_column("what the code computes", overflow="fold", ratio=3)
        for d in summary["diagnoses"][:8]:
            named.add_row(str(d["students"]), d["component"], Text(inert(d["what"])))
        parts.append(named)
    if summary["public_gap"]:
        gap = Table(title=f"Grade vs public tier alone (differs by {GAP:g}% of the maximum or more)",
                    title_justify="left")
        gap.add_column("student")
        gap.add_column("grade", justify="right")
        gap.add_column("public tier", justify="right")
        for g in summary["public_gap"][:10]:
            gap.add_row(Text(inert(g["student"])), f"{g['score']:g}", f"{g['public']:g}")
        parts.append(gap)
    if summary.get("held"):
        parts.append(_held(summary["held"]))
    if any(not f.get("held") for f in summary.get("flagged", [])):
        parts.append(_flagged([f for f in summary["flagged"] if not f.get("held")]))
    return Panel(Group(*parts), title="class summary", title_align="left")


def _held(found: list[dict]) -> RenderableType:
    """Every component held for review, each with the lines that flagged it (grader.render.review)."""
    table = Table(title=review.HELD_TITLE, title_justify="left")
    table.add_column("student", overflow="fold")
    table.add_column("component", no_wrap=True)
    table.add_column("points held, the lines flagged", overflow="fold")
    for h in found:
        table.add_row(Text(inert(h["student"])), h["component"], Text(review.summary_row(h["points"], h["lines"])))
    return table


def _flagged(found: list[dict]) -> RenderableType:
    """grader.judging.forbidden's findings not held, for the instructor to review (summary.json has them all)."""
    table = Table(title="Forbidden APIs (scored 0) and code flagged for review", title_justify="left")
    table.add_column("student", overflow="fold")
    table.add_column("component", no_wrap=True)
    table.add_column("what, where", overflow="fold")
    for f in found[:20]:
        mark = "scored 0: " if f["scored_0"] else ""
        what = f"{mark}{inert(str(f['what']))} at {inert(str(f['where']))}"
        table.add_row(Text(inert(f["student"])), f["component"], Text(what))
    if len(found) > 20:
        table.caption = f"and {len(found) - 20} more in summary.json"
    return table


def _similar(found: dict, data: str = "summary.json", page: str = "class.html") -> RenderableType:
    """The pairs listed by grader.batch.similarity, with where they match (`data` has them all, `page`
    shows the lines)."""
    share = f"{found['threshold'] * 100:g}%"
    if found.get("unavailable"):
        return Text(f"Similar submissions: not compared: {found['unavailable']}")
    if not found["pairs"]:
        return Text(f"Similar submissions: no pair shares {share} of either's code (stubs not counted)")
    shown: list[RenderableType] = []
    if found.get("groups"):
        groups = Table(title=f"Groups sharing code ({share} of either's code or more, stubs not counted)",
                       title_justify="left")
        groups.add_column("n", justify="right", no_wrap=True)
        groups.add_column("top", justify="right", no_wrap=True)
        groups.add_column("students", overflow="fold")
        for g in found["groups"][:GROUPS]:
            groups.add_row(str(len(g["students"])), f"{g['similarity'] * 100:.0f}%",
                           Text(", ".join(map(inert, g["students"]))))
        if len(found["groups"]) > GROUPS:
            groups.caption = f"and {len(found['groups']) - GROUPS} more groups in {data} and {page}"
        shown.append(groups)
    table = Table(title=f"Similar pairs ({share} of either's code or more; the lines in {page})",
                  title_justify="left")
    table.add_column("students", overflow="fold")
    table.add_column("share", justify="right", no_wrap=True)
    table.add_column("matching lines", overflow="fold")
    for p in found["pairs"][:10]:
        where = "\n".join(f"{f['file']} {_ranges(f['a'])} ↔ {_ranges(f['b'])}" for f in p["files"] if f["a"])
        # names as text: a student's folder called "[bold]x" is not markup
        table.add_row(Text("\n".join(map(inert, p["students"]))),
                      "\n".join(f"{s * 100:.0f}%" for s in p["similarity"]), where)
    if len(found["pairs"]) > 10:
        table.caption = f"and {len(found['pairs']) - 10} more pairs in {data} and {page}"
    return Group(*shown, table)


def _ranges(stretches: list[dict]) -> str:
    return ",".join(f"{r['from']}" if r["from"] == r["to"] else f"{r['from']}-{r['to']}" for r in stretches)
