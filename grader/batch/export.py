"""A batch's grades.csv written into the sheet an LMS imports: Canvas's gradebook export, Moodle's offline
grading worksheet. Rows are matched by the LMS's own id of the student (grades.csv's `lms_id`, read from
a Canvas or Moodle download by grader.batch.lms); every other cell of the sheet is left as the LMS wrote
it, so that the LMS recognises its own file.

- Canvas (Grades > Export; canvas-lms lib/gradebook_exporter.rb): `Student` (or `LastName, FirstName`
  where the gradebook shows them apart), `ID`, `SIS User ID`, `SIS Login ID`, `Section`, custom columns,
  `<assignment> (<id>)`, ..., then a `Points Possible` row (and, above it, a row naming assignments with
  manual posting), both without an ID and kept as they are. The chosen column gets each student's total;
  a student of the gradebook with no row in grades.csv gets a blank cell (Canvas's import leaves a blank
  alone).
- Moodle (Assignment > View all submissions > Download grading worksheet; mod/assign/gradingtable.php):
  `Identifier` ("Participant N"), `Full name`, ..., `Status`, `Grade`, `Maximum Grade`, `Grade can be
  changed`, `Last modified (submission)`, `Last modified (grade)`, `Feedback comments`. Its import
  (mod/assign/feedback/offline/importgradeslib.php) needs `Identifier`, `Grade` and `Last modified
  (grade)`, and skips a grade above the maximum. `Grade` gets the total and `Feedback comments` a
  one-line summary (points per component, overrides named); rows of students with no row in grades.csv
  are left as they were.
Students in one file and not the other are listed, one line each, as are totals Moodle would skip.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch import safe
from grader.batch.outputs import RowStatus
from grader.course import ConfigError

GRADES_COLUMNS = ("student", "total", "status", "lms_id")


@dataclass
class Filled:
    text: str  # the sheet, filled
    filled: int = 0
    unmatched: list[str] = field(default_factory=list)  # one line each: who is in one file and not the other


def read_grades(path: Path) -> tuple[list[str], dict[str, dict[str, str]], list[str]]:
    """(components, {lms_id: row}, students without an lms_id) of a batch's grades.csv."""
    rows, header = _read(path, "GRADES")
    missing = [c for c in GRADES_COLUMNS if c not in header]
    if missing:
        raise ConfigError(f"GRADES: {str(path)!r} is not a grades.csv of `grade batch` (no {', '.join(missing)} "
                          "column; a batch of this kit's version writes lms_id)")
    components = header[header.index("student") + 1:header.index("total")]
    by_id, without = {}, []
    for row in rows:
        if row["lms_id"]:
            by_id[row["lms_id"]] = row
        else:
            without.append(row["student"])
    return components, by_id, without


def _read(path: Path, what: str) -> tuple[list[dict[str, str]], list[str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{what}: cannot read {str(path)!r} ({e.__class__.__name__})") from None
    reader = csv.DictReader(io.StringIO(text))
    return list(reader), list(reader.fieldnames or [])


def _write(header: list[str], rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _total(row: dict[str, str]) -> str:
    return row["total"]


def canvas(grades: Path, gradebook: Path, column: str) -> Filled:
    """Canvas's gradebook export with `column` (its header, or the header without Canvas's " (ID)")
    filled from `grades`."""
    _, by_id, without = read_grades(grades)
    rows, header = _read(gradebook, "--gradebook")
    if "ID" not in header or not ("Student" in header or {"LastName", "FirstName"} <= set(header)):
        raise ConfigError(f"--gradebook: {str(gradebook)!r} is not a Canvas gradebook export (no ID column, or "
                          "no Student or LastName and FirstName columns)")
    chosen = [h for h in header if h == column] or [h for h in header if re.sub(r"\s*\(\d+\)$", "", h) == column]
    if len(chosen) != 1:
        raise ConfigError(f"--column: {'no' if not chosen else 'more than one'} column {column!r} in "
                          f"{gradebook.name}")
    filled = Filled("")
    seen = set()
    for row in rows:
        if not (row.get("ID") or "").strip():
            continue  # Canvas's own rows under the header (Points Possible, manual posting): no student's
        seen.add(row["ID"])
        got = by_id.get(row["ID"])
        if got is None:
            row[chosen[0]] = ""
            name = row["Student"] if "Student" in row else f"{row['LastName']}, {row['FirstName']}"
            filled.unmatched.append(f"no submission graded: {safe.inert(name)} (ID {row['ID']})")
        else:
            row[chosen[0]] = _total(got)
            filled.filled += 1
    filled.unmatched += _not_in_sheet(by_id, seen, without, "the gradebook")
    filled.text = _write(header, rows)
    return filled


def _not_in_sheet(by_id: dict[str, dict[str, str]], seen: set[str], without: list[str], sheet: str) -> list[str]:
    return ([f"not in {sheet}: {safe.inert(r['student'])} (id {r['lms_id']})"
             for i, r in sorted(by_id.items()) if i not in seen]
            + [f"not in {sheet}: {safe.inert(s)} (no LMS id: graded from a folder, not an LMS download)"
               for s in without])


def moodle(grades: Path, worksheet: Path) -> Filled:
    """Moodle's offline grading worksheet with `Grade` and `Feedback comments` filled from `grades`."""
    components, by_id, without = read_grades(grades)
    rows, header = _read(worksheet, "--worksheet")
    # the columns Moodle's import reads (it refuses a sheet without the first three)
    need = [c for c in ("Identifier", "Grade", "Last modified (grade)", "Feedback comments") if c not in header]
    if need:
        raise ConfigError(f"--worksheet: {str(worksheet)!r} is not a Moodle grading worksheet (no "
                          f"{', '.join(need)} column; download it with feedback comments enabled)")
    if "Maximum Grade" not in header:
        raise ConfigError(f"--worksheet: {str(worksheet)!r} has no Maximum Grade column: the assignment is graded "
                          "on a scale in Moodle, and the kit's totals are points (grade it by points)")
    filled = Filled("")
    seen = set()
    for row in rows:
        found = re.fullmatch(r"Participant (\d+)", (row.get("Identifier") or "").strip())
        if not found:
            continue
        seen.add(found[1])
        got = by_id.get(found[1])
        if got is None:
            filled.unmatched.append(f"no submission graded: {safe.inert(row.get('Full name') or '')} "
                                    f"({row['Identifier']})")
            continue
        row["Grade"] = _total(got)
        row["Feedback comments"] = safe.cell(comment(components, got))
        filled.filled += 1
        total, most = _number(row["Grade"]), _number(row["Maximum Grade"])
        if total is not None and most is not None and total > most:
            filled.unmatched.append(f"above the Maximum Grade ({row['Maximum Grade']}), which Moodle's import "
                                    f"skips: {safe.inert(row.get('Full name') or '')} ({row['Identifier']}) "
                                    f"{row['Grade']}")
    filled.unmatched += _not_in_sheet(by_id, seen, without, "the worksheet")
    filled.text = _write(header, rows)
    return filled


def _number(text: str) -> float | None:
    """A number as Moodle writes it (format_float: "40.00", or "40,00" where the decimal separator is a
    comma); None for anything else."""
    text = (text or "").strip()
    try:
        return float(text.replace(",", ".") if "." not in text else text)
    except ValueError:
        return None


def comment(components: list[str], row: dict[str, str]) -> str:
    """One line: the total and the points per component, overrides named."""
    changed = set((row.get("overrides") or "").split())
    parts = [f"{c} {row[c]}" + (" (override)" if c in changed else "") for c in components]
    status = "" if row["status"] in (RowStatus.GRADED, "") else f" [{row['status']}]"
    return f"Total {row['total']}{status}: " + ", ".join(parts)
