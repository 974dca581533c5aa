"""How late a submission was, from what its download says, and what course.toml's [late] takes for it.

Sources, the first that applies:
- Gradescope's `submission_metadata.json` in the student's folder or zip (the file Gradescope writes
  beside each submission): `created_at` against the student's own `assignment.due_date` (an extension)
  or the assignment's; `previous_submissions` are counted in the note, the grade being the last one's;
- a Canvas download: Canvas marks a late submission's files `_LATE` (against the student's own due
  date) and says nothing of an unmarked one, so unmarked is on time; marked is late by the newest
  file's time past [late.due] where that is set, else late by an amount the download does not give
  (no penalty, said so in the note);
- else the newest time of the student's files (a folder's or the zip's own entries), against
  [late.due] of the assignment: the only source a plain folder has.

The penalty (grader.late_policy.Late) is a share of the grade after overrides (grader.batch.regrade): `apply`
puts an earlier penalty back first, so applying is the same whatever the report held.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.findings import Note, Noted
from grader.late_policy import Late
from grader.report_json import Graded, graded

METADATA = "submission_metadata.json"
IGNORED = {"__MACOSX", "__pycache__", ".ipynb_checkpoints", ".DS_Store", ".git", METADATA}


@dataclass(frozen=True)
class Lateness:
    hours: float | None  # past the due date, 0 when on time; None: late by an amount no source gives
    source: str  # "gradescope", "canvas" or "file times"
    detail: str = ""  # what the source said, for the note (earlier submissions)


def metadata(source: Path) -> dict | None:
    """Gradescope's submission_metadata.json at the top of a student's folder or zip (or one folder
    below, as zips wrap), or None."""
    try:
        if source.is_dir() and not source.is_symlink():
            for path in (source / METADATA, *(p / METADATA for p in source.iterdir() if p.is_dir())):
                if path.is_file() and not path.is_symlink():
                    return _json(path.read_bytes()[: 1 << 20])
        elif source.is_file() and source.suffix.lower() == ".zip":
            with zipfile.ZipFile(source) as z:
                for info in z.infolist():
                    if info.filename.rstrip("/").split("/")[-1] == METADATA and info.filename.count("/") <= 1 \
                            and info.file_size <= 1 << 20:
                        return _json(z.read(info))
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return None
    return None


def _json(data: bytes) -> dict | None:
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _when(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def from_gradescope(meta: dict) -> Lateness | None:
    """Gradescope's own times: the submission's against the due date (a student's own first)."""
    submitted = _when(meta.get("created_at"))
    users = [u for u in meta.get("users") or [] if isinstance(u, dict)]
    own = [_when((u.get("assignment") or {}).get("due_date")) for u in users if isinstance(u.get("assignment"), dict)]
    due = max((d for d in own if d), default=None) or _when((meta.get("assignment") or {}).get("due_date"))
    if submitted is None or due is None:
        return None
    earlier = [s for s in meta.get("previous_submissions") or [] if isinstance(s, dict)]
    on_time = [s for s in earlier if (_when(s.get("submission_time")) or submitted) <= due]
    detail = (f"{len(earlier)} earlier submission{'s' if len(earlier) != 1 else ''}, {len(on_time)} on time; "
              "the last is graded") if earlier else ""
    return Lateness(max(0.0, (submitted - due).total_seconds() / 3600), "gradescope", detail)


def newest_file_time(source: Path) -> datetime | None:
    """The newest modification time of the files a student handed in (a zip's own entries), or None."""
    times: list[datetime] = []
    if source.is_file() and source.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(source) as z:
                # a zip keeps local times without a zone: read as this machine's, as unzip does
                times = [datetime(*i.date_time).astimezone() for i in z.infolist()
                         if not i.is_dir() and not set(i.filename.split("/")) & IGNORED]
        except (OSError, zipfile.BadZipFile, ValueError):
            return None
    elif source.is_dir() and not source.is_symlink():
        for path in source.rglob("*"):
            if path.is_file() and not path.is_symlink() and not set(path.relative_to(source).parts) & IGNORED:
                times.append(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    return max(times, default=None)


def measure(source: Path, *, due: datetime | None, canvas_late: bool | None) -> Lateness | None:
    """How late the submission at `source` was (see the module's docstring); None: no source says.
    `canvas_late`: whether Canvas marked it _LATE, None where it is not a Canvas download."""
    meta = metadata(source)
    if meta is not None:
        found = from_gradescope(meta)
        if found is not None:
            return found
    if canvas_late is not None:
        if not canvas_late:
            return Lateness(0.0, "canvas")
        newest = newest_file_time(source) if due else None
        if newest is None or due is None:
            return Lateness(None, "canvas")
        return Lateness(max(0.0, (newest - due).total_seconds() / 3600), "canvas", "marked late; by its files' times")
    newest = newest_file_time(source) if due else None
    if newest is None or due is None:
        return None
    return Lateness(max(0.0, (newest - due).total_seconds() / 3600), "file times")


def percent(hours: float | None, policy: Late) -> tuple[int, float]:
    """(days late, the percentage of the grade taken) for `hours` past the due date."""
    if hours is None or hours <= 0:
        return 0, 0.0
    days = math.ceil(hours / 24)  # a started day counts whole
    if hours <= policy.grace_hours:
        return days, 0.0
    if policy.cutoff_days is not None and hours > policy.cutoff_days * 24:
        return days, 100.0
    return days, min(days * policy.penalty_per_day, policy.cap)


def undo(report: dict) -> dict:
    """`report` as it was before any late penalty."""
    doc = graded(report)
    if doc.late is None:
        return report
    out = {k: v for k, v in report.items() if k != "late"}
    out["score"] = doc.late["before"]
    out["notes"] = [n for n in doc.notes if n != doc.late["note"]]
    if "noted" in report:  # the notes as data (a report written before them has its words only)
        out["noted"] = [n.to_json() for n in doc.report.notes if n.kind != Noted.LATE]
    return out


def apply(report: dict, lateness: Lateness | None, policy: Late | None) -> dict:
    """`report` (after overrides) with its lateness and the policy's penalty: score, a "late" record and
    a note (which feedback, Gradescope's results and the HTML show)."""
    report = undo(report)
    if lateness is None:
        return report
    days, taken = percent(lateness.hours, policy) if policy else (0, 0.0)
    doc = graded(report)
    before = doc.total
    after = round(before * (1 - taken / 100), 4)
    note = note_of(lateness, days, taken, before, after, policy)
    noted = {"noted": [*(n.to_json() for n in doc.report.notes), Note(Noted.LATE, note).to_json()]
             } if "noted" in report else {}
    return {**report, "score": after, "notes": [*doc.notes, note], **noted,
            "late": {"hours": None if lateness.hours is None else round(lateness.hours, 2), "days": days,
                     "source": lateness.source, "percent": taken, "points": round(before - after, 4),
                     "before": before, "note": note}}


def note_of(lateness: Lateness, days: int, taken: float, before: float, after: float, policy: Late | None) -> str:
    said = f" ({lateness.detail})" if lateness.detail else ""
    if lateness.hours is None:
        return (f"Late: marked late by Canvas{said}, by an amount the download does not give; no penalty "
                "(course.toml [late.due] measures it by the files' times)")
    if lateness.hours <= 0:
        return f"On time ({lateness.source}){said}"
    if policy is None:
        why = "no penalty (course.toml has no [late] table)"
    elif taken == 0 and lateness.hours <= policy.grace_hours:
        why = f"within the {policy.grace_hours:g} h grace: no penalty"
    elif taken == 100 and policy.cutoff_days is not None and lateness.hours > policy.cutoff_days * 24:
        why = f"past the {policy.cutoff_days:g}-day cut-off: the grade is 0 (was {before:g})"
    else:
        cap = " (the cap)" if taken == policy.cap and days * policy.penalty_per_day > policy.cap else ""
        why = f"-{taken:g}%{cap}: {before:g} -> {after:g}"
    return f"Late: {lateness.hours:.1f} h after the due date ({lateness.source}{said}), {days} day(s): {why}"


def column(doc: Graded) -> tuple[str, str]:
    """grades.csv's `late` (hours past the due date; "unknown" where a source says late and not how much;
    empty where no source says) and `late_penalty` (points taken)."""
    late = doc.late
    if not late:
        return "", ""
    hours = "unknown" if late["hours"] is None else f"{late['hours']:g}"
    return hours, f"{late['points']:g}"
