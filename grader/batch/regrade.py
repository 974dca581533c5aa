"""A batch run again into the same OUT: what changed since the last run, and the instructor's overrides.

Each student's record keeps the digests of what decided the grade (their files, course.toml, the
suites, the reference, the grader's code), so a changed total says why it changed (changes.csv).
Overrides (a regrade request granted: `student,component,points,reason`) are applied after
grading, on top of the graded points, which the report keeps (`"override": {"points", "reason",
"graded"}` on the component): a later run grades again and applies them again, so they last until
they are removed from the file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path

from grader.batch import html, safe
from grader.batch.feedback import feedback
from grader.batch.outputs import gradescope, safe_name, write_atomic
from grader.course import Assignment, Course
from grader.course_table import ConfigError
from grader.report_json import Graded, entries, from_json, graded
from grader.results import Report

GRADER_DIR = Path(__file__).resolve().parent.parent
# what decides a grade, in the order changes.csv's "why" names them
CAUSES = ("submission", "course", "suites", "reference", "grader")
OVERRIDE_COLUMNS = ["student", "component", "points", "reason"]
CHANGE_COLUMNS = ["student", "before", "after", "change", "components", "why"]


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith("."):
                h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _course_digest(course: Course) -> str:
    """course.toml's text but its [late] tables, which decide no grading: a policy changed is applied
    again to the graded points (grader.batch.late), as overrides are, without grading the class again.
    In TOML every line from a `[late]` or `[late.x]` header to the next header is that table's; a
    [late] written otherwise (dotted keys) stays in the digest, which only grades again."""
    kept, inside = [], False
    for line in course.path.read_text().splitlines(keepends=True):
        header = re.match(r"\s*\[\[?\s*([\w.\"' -]+?)\s*\]", line)
        if header:
            inside = re.fullmatch(r"late(\..*)?", header[1].replace(" ", "")) is not None
        if not inside and line.strip():  # blank lines neither: the table's own often come with it
            kept.append(line)
    return hashlib.sha256("".join(kept).encode()).hexdigest()


def course_digests(course: Course) -> dict[str, str]:
    """A digest of each thing besides the submission that decides grades (CAUSES but "submission")."""
    grader = hashlib.sha256()
    for path in sorted(GRADER_DIR.rglob("*.py")):  # the grader's own code decides grades too
        grader.update(str(path.relative_to(GRADER_DIR)).encode() + b"\0" + path.read_bytes())
    return {"course": _course_digest(course), "suites": _tree_digest(course.suites),
            "reference": _tree_digest(course.reference), "grader": grader.hexdigest()}


def _points(doc: Graded) -> dict[str, float]:
    return {c.name: c.score for c in doc.report.components}


def _overridden(doc: Graded) -> dict[str, tuple[float, str]]:
    return {name: (o.points, o.reason) for name, o in doc.overrides.items()}


def why(before: Graded, after: Graded) -> list[str]:
    """What differs between two records' digests (CAUSES), "override" where the overrides do and "late"
    where the late penalty does (grader.batch.late)."""
    old, new = before.batch.get("digests"), after.batch.get("digests")
    causes = ([c for c in CAUSES if old.get(c) != new.get(c)] if old and new
              else ["unknown (the earlier run kept no digests)"])
    return (causes + (["override"] if _overridden(before) != _overridden(after) else [])
            + (["late"] if before.late != after.late else []))


def changes(before: dict[str, dict], after: list[tuple[str, Graded]]) -> list[dict]:
    """A row per student graded in both runs whose points or status changed: changes.csv's columns.
    `before`: the earlier run's records as read from OUT; `after`: this run's rows."""
    rows = []
    for student, doc in after:
        old = before.get(student)
        if old is None:
            continue
        then = graded(old)
        was, now = _points(then), _points(doc)
        moved = [name for name in now if abs(now[name] - was.get(name, 0.0)) > 1e-9]
        status = then.status != doc.status
        if not moved and not status and abs(then.total - doc.total) <= 1e-9:
            continue
        rows.append({"student": student, "before": then.total, "after": doc.total,
                     "change": round(doc.total - then.total, 4), "components": moved, "why": why(then, doc)})
    return rows


def write_changes(path: Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CHANGE_COLUMNS)
    for r in rows:
        writer.writerow([safe.cell(r["student"]), f"{r['before']:g}", f"{r['after']:g}", f"{r['change']:+g}",
                         " ".join(r["components"]), " ".join(r["why"])])
    write_atomic(path, buffer.getvalue())


# student -> component -> (points, reason); points None: "release", the points a component held for review
# earned (its `held`: grader.judging.scoring, a flag under the course's `[policy] flagged = "hold"`)
Overrides = dict[str, dict[str, tuple[float | None, str]]]
RELEASE = "release"


def load_overrides(path: Path, spec: Assignment, students: set[str]) -> Overrides:
    """The overrides file, checked: a ConfigError (one line, exit 2) naming the first bad value."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--overrides: cannot read {str(path)!r} ({e.__class__.__name__})") from None
    reader = csv.DictReader(io.StringIO(text))
    if [(h or "").strip().lower() for h in reader.fieldnames or []] != OVERRIDE_COLUMNS:
        raise ConfigError(f"--overrides: {str(path)!r} must have the columns {','.join(OVERRIDE_COLUMNS)}, "
                          f"got {','.join(reader.fieldnames or []) or 'none'}")
    maxima = {c.name: c.points for c in spec.components}
    found: Overrides = {}
    for line, row in enumerate(reader, 2):
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        student, component = (row.get(k) or "" for k in ("student", "component"))
        where = f"--overrides: {path.name} line {line}"
        if student not in students:
            raise ConfigError(f"{where}: no student {safe.inert(student)!r} in this class")
        if component not in maxima:
            raise ConfigError(f"{where}: no component {safe.inert(component)!r} in {spec.name} "
                              f"({', '.join(maxima)})")
        given = (row.get("points") or "").strip()
        try:
            points: float | None = None if given.lower() == RELEASE else float(given)
        except ValueError:
            points = float("nan")
        if points is not None and not 0 <= points <= maxima[component]:
            raise ConfigError(f"{where}: points {safe.inert(row.get('points') or '')!r} for {component} must be "
                              f"a number from 0 to {maxima[component]:g}, or {RELEASE!r} (the points held for review)")
        if component in found.get(student, {}):
            raise ConfigError(f"{where}: a second override of {component} for {safe.inert(student)!r}")
        found.setdefault(student, {})[component] = (points, (row.get("reason") or "").strip())
    return found


def apply_overrides(report: dict, mine: dict[str, tuple[float | None, str]]) -> dict:
    """`report` with the overrides `mine` (component -> (points, reason)) in place of any earlier ones:
    the graded points are put back first, so applying is the same whatever the report held. Points
    None release what a component held for review earned (`held`; a component not held keeps its own)."""
    doc = graded(report)
    components: list[dict] = []
    delta: float = 0  # an int as sum() starts, so that a whole total with no override stays whole
    for entry, c in zip(entries(report), doc.report.components, strict=True):
        # the points grading gave, where an earlier override replaced them
        score = doc.overrides[c.name].graded if c.name in doc.overrides else c.score
        entry = {k: v for k, v in {**entry, "score": score}.items() if k != "override"}
        if c.name in mine:
            points, reason = mine[c.name]
            if points is None:
                held = c.held
                points = float(held) if isinstance(held, (int, float)) and 0 <= held <= c.max_score else score
            entry["override"] = {"points": points, "reason": reason, "graded": score}
            entry["score"] = points
            delta += points - score
        components.append(entry)
    out = {k: v for k, v in report.items() if k != "graded_score"}
    out["components"] = components
    out["score"] = round(doc.graded_total + delta, 4)
    if mine:
        out["graded_score"] = doc.graded_total
    return out


def feedback_section(report: dict) -> str:
    """The lines that the student's feedback gets for their overrides ("" for none)."""
    import textwrap

    doc = graded(report)
    done = [(c, doc.overrides[c.name]) for c in doc.report.components if c.name in doc.overrides]
    if not done:
        return ""
    lines = ["", "Changed by your instructor (override)"]
    for c, o in done:
        lines += textwrap.wrap(f"{c.name}: {o.points:g} / {c.max_score:g} (graded {o.graded:g})"
                               + (f": {safe.inert(o.reason)}" if o.reason else ""), 78,
                               initial_indent="  ", subsequent_indent="    ")
    lines.append(f"  Total: {doc.total:g} / {doc.report.max_score:g}")
    return "\n".join(lines) + "\n"


OVERRIDE_MARK = "\nChanged by your instructor (override)\n"
LATE_MARK = "\nLateness\n"  # grader.batch.late's note, after the overrides


def read(report: dict, spec: Assignment) -> Report:
    """The typed Report of a batch's `report`, with what its JSON leaves to the course (the title, the
    checks' weights, the components' parts): rendered again, it is what the worker rendered."""
    weights = {c.id: c.weight for comp in spec.components for c in comp.checks}
    return from_json(report, title=spec.title, weights=weights, depends={c.name: c.depends for c in spec.components})


def late_section(report: dict) -> str:
    late = graded(report).late
    return f"{LATE_MARK}  {safe.inert(late['note'])}\n" if late else ""


def rewrite_overridden(out: Path, student: str, report: dict, spec: Assignment, *, full: bool) -> None:
    """A graded student's files again, for `report` whose overrides, lateness or roster id changed: the
    feedback (text and HTML, rendered again from the report as the batch's worker rendered it, `full`:
    with the hidden tier's details), Gradescope's results, the report."""
    name = safe_name(student)
    text, page = out / "feedback" / f"{name}.txt", out / "feedback" / f"{name}.html"
    if text.exists() or page.exists():  # a batch writes both, or neither where it failed to grade
        rendered, rendered_html = feedback(read(report, spec), student, hidden=full)
        write_atomic(text, rendered + feedback_section(report) + late_section(report))
        # the roster's id of the student beside the folder's name (grader.batch.roster)
        shown = graded(report).batch.get("student_id")
        write_atomic(page, html.student_page(f"{shown} ({student})" if shown and shown != student else student,
                                             report, rendered_html))
    write_atomic(out / "gradescope" / name / "results.json", json.dumps(gradescope(report), indent=2) + "\n")
    write_atomic(out / "reports" / f"{name}.json", json.dumps(report, indent=2) + "\n")
