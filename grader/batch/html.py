"""The batch's HTML: class.html (the summary with plots and the similar pairs) and a page per student.

Self-contained files: styles inline, plots as inline SVG drawn by matplotlib (the `plots` extra;
without it the pages have the tables alone and say so), nothing fetched at view time. Templates
are jinja2's with autoescaping on: a student's name, message or code is text, never markup. The
only markup passed through unescaped is the kit's own: matplotlib's SVG (no student text in it)
and rich's HTML export of the feedback, which escapes what it renders.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from urllib.parse import quote

from grader import words
from grader.batch.outputs import safe_name, write_atomic
from grader.batch.safe import inert
from grader.report_json import Graded, from_json

TEMPLATES = Path(__file__).resolve().parent / "templates"
NO_PLOTS = "matplotlib is not installed: the plots are left out (pip install \"transformer-course-kit[plots]\")"
SHOWN_PAIRS = 20  # similar pairs shown side by side in class.html (summary.json has them all)


def _env():
    import jinja2

    # every value shown is inert (grader.batch.safe) before it is escaped; the kit's own markup
    # (|safe: the SVG plots, rich's export of the feedback) is left as it is
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              finalize=_inert)


def _inert(value):
    import markupsafe

    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return inert(value, lines=True)
    return value


def write_class(out: Path, summary: dict, docs: list[tuple[str, Graded]]) -> Path:
    """class.html in `out`; `docs`: (student, its report with its "batch" record, read), as summarise takes."""
    names = [c["name"] for c in summary["components"]]
    points = {n: [next((c.score for c in d.report.components if c.name == n), 0.0) for _, d in docs] for n in names}
    plots, note = _plots(summary, points)
    students = [{"name": s, "score": d.total, "status": d.status,
                 "href": f"feedback/{quote(safe_name(s))}.html" if (out / "feedback" / f"{safe_name(s)}.html").exists()
                 else ""} for s, d in docs]
    page = _env().get_template("class.html.j2").render(
        s=summary, plots=plots, note=note, students=students, shown=SHOWN_PAIRS,
        medians={n: _median(v) for n, v in points.items()})
    write_atomic(out / "class.html", page)
    return out / "class.html"


def similarity_page(assignment: str, found: dict) -> str:
    """similarity.html (`grade similarity`): class.html's groups and pairs of `found` (similarity.json's)."""
    return _env().get_template("similarity.html.j2").render(assignment=assignment, sim=found, shown=SHOWN_PAIRS,
                                                             students=found["students"], earlier=found["earlier"])


def student_page(student: str, report: dict, feedback_html: str) -> str:
    """A student's page: their score per component and the feedback report (rich's HTML of it)."""
    # as much of each diagnosis as course.toml [feedback] reveal allows (none with "check")
    typed = from_json(report)
    said = {c.name: words.diagnosis(c.diagnosis, typed.reveal) for c in typed.components}
    return _env().get_template("student.html.j2").render(student=student, r=report, feedback=feedback_html,
                                                          said=said)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2) if n else 0.0


def _plots(summary: dict, points: dict[str, list[float]]) -> tuple[dict[str, str], str]:
    """{"histogram", "components"}: inline SVG, or ({}, why not)."""
    try:
        import matplotlib
    except ImportError:
        return {}, NO_PLOTS
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    # the same class draws the same bytes: fixed ids, no date
    with matplotlib.rc_context({"svg.hashsalt": "grade-batch", "svg.fonttype": "path", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(6.4, 2.8))
        bins = summary["histogram"]
        width = (bins[0]["to"] - bins[0]["from"]) if bins else 1.0
        ax.bar([b["from"] for b in bins], [b["students"] for b in bins], width=width * 0.92, align="edge",
               color="#4c78a8")
        ax.set_xlabel(f"total score (out of {summary['max_score']:g})")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("Score histogram")
        histogram = _svg(fig)

        names = list(points)
        fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * max(1, len(names))))
        maxima = {c["name"]: c["max_score"] or 1.0 for c in summary["components"]}
        for y, name in enumerate(names):
            share = [p / maxima[name] * 100 for p in points[name]]
            # each student a dot (jittered a little to show how many share a score), the mean a bar
            jitter = [((i * 37) % 11 - 5) / 40 for i in range(len(share))]
            ax.scatter(share, [y + j for j in jitter], s=12, alpha=0.6, color="#4c78a8", zorder=3)
            mean = sum(share) / len(share) if share else 0.0
            ax.barh(y, mean, height=0.6, color="#c6d7ea", zorder=1)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlim(-3, 103)
        ax.set_xlabel("% of the component's points (bar: mean; dots: students)")
        ax.set_title("Points per component")
        components = _svg(fig)
    return {"histogram": histogram, "components": components}, ""


def _svg(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.tight_layout()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    # the <svg> element alone: inline in the page, without its XML prologue and doctype
    return re.sub(r"^.*?(?=<svg)", "", buffer.getvalue(), count=1, flags=re.S)
