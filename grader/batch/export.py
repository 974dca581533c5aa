"""A batch's grades.csv written into the sheet an LMS imports: Canvas's gradebook export, Moodle's offline
grading worksheet. Rows are matched by the LMS's own id of the student (grades.csv's `lms_id`, read from
a Canvas or Moodle download by grader.batch.lms) or, for a class graded from folders or Gradescope, by
the identities a roster gives the row's `student_id` (grader.batch.roster; MATCHES); every other cell of
the sheet is left as the LMS wrote it, so that the LMS recognises its own file.

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
from grader.batch.roster import Roster
from grader.course_table import ConfigError

GRADES_COLUMNS = ("student", "total", "status", "lms_id")


@dataclass
class Filled:
    text: str  # the sheet, filled
    filled: int = 0
    unmatched: list[str] = field(default_factory=list)  # one line each: who is in one file and not the other
    graded: int = 0  # rows of grades.csv
    unidentified: int = 0  # of those, with neither an LMS id nor a roster's identity for this LMS


# (the roster's column, the sheet's column it matches) per LMS; grades.csv's lms_id matches the first sheet column
MATCHES = {"canvas": (("canvas_id", "ID"), ("sis_id", "SIS User ID"), ("canvas_login", "SIS Login ID")),
           "moodle": (("moodle_id", "Identifier"), ("email", "Email address"))}


def read_grades(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(components, rows) of a batch's grades.csv."""
    rows, header = _read(path, "GRADES")
    missing = [c for c in GRADES_COLUMNS if c not in header]
    if missing:
        raise ConfigError(f"GRADES: {str(path)!r} is not a grades.csv of `grade batch` (no {', '.join(missing)} "
                          "column; a batch of this kit's version writes lms_id)")
    return header[header.index("student") + 1:header.index("total")], rows


def _key(sheet_column: str, value: str) -> tuple[str, str]:
    value = value.strip()
    if sheet_column == "Identifier":
        value = re.sub(r"^Participant\s+", "", value)
    return sheet_column, value.casefold()


def identities(row: dict[str, str], lms: str, roster: Roster | None) -> list[tuple[str, str]]:
    """The (sheet column, value) pairs that name the student of a grades.csv row in `lms`'s sheet: the
    download's id, then the roster's identities of the row's student_id."""
    keys = [_key(MATCHES[lms][0][1], row["lms_id"])] if row["lms_id"] else []
    student = row.get("student_id") or ""
    if roster is not None and student:
        keys += [_key(sheet, roster.identity(student, mine)) for mine, sheet in MATCHES[lms]
                 if roster.identity(student, mine)]
    return keys


def _match(grades: list[dict[str, str]], lms: str, roster: Roster | None, filled: Filled) -> dict:
    """{(sheet column, value): grades row}; counts the rows no identity names in `filled`."""
    index: dict[tuple[str, str], dict[str, str]] = {}
    filled.graded = len(grades)
    for row in grades:
        keys = identities(row, lms, roster)
        filled.unidentified += not keys
        for key in keys:
            index.setdefault(key, row)
    return index


def _find(index: dict, sheet_row: dict[str, str], lms: str) -> dict[str, str] | None:
    for _, column in MATCHES[lms]:
        got = index.get(_key(column, sheet_row.get(column) or "")) if (sheet_row.get(column) or "").strip() else None
        if got is not None:
            return got
    return None


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


def canvas(grades: Path, gradebook: Path, column: str, roster: Roster | None = None) -> Filled:
    """Canvas's gradebook export with `column` (its header, or the header without Canvas's " (ID)")
    filled from `grades`; a row is the student's whose download id or roster identity (grader.batch.roster:
    canvas_id, sis_id, canvas_login) is in the gradebook's ID, SIS User ID or SIS Login ID."""
    _, rows_graded = read_grades(grades)
    rows, header = _read(gradebook, "--gradebook")
    if "ID" not in header or not ("Student" in header or {"LastName", "FirstName"} <= set(header)):
        raise ConfigError(f"--gradebook: {str(gradebook)!r} is not a Canvas gradebook export (no ID column, or "
                          "no Student or LastName and FirstName columns)")
    chosen = [h for h in header if h == column] or [h for h in header if re.sub(r"\s*\(\d+\)$", "", h) == column]
    if len(chosen) != 1:
        raise ConfigError(f"--column: {'no' if not chosen else 'more than one'} column {column!r} in "
                          f"{gradebook.name}")
    filled = Filled("")
    index = _match(rows_graded, "canvas", roster, filled)
    seen: set[str] = set()
    for row in rows:
        if not (row.get("ID") or "").strip():
            continue  # Canvas's own rows under the header (Points Possible, manual posting): no student's
        got = _find(index, row, "canvas")
        if got is None:
            row[chosen[0]] = ""
            name = row["Student"] if "Student" in row else f"{row['LastName']}, {row['FirstName']}"
            filled.unmatched.append(f"no submission graded: {safe.inert(name)} (ID {row['ID']})")
        else:
            seen.add(got["student"])
            row[chosen[0]] = _total(got)
            filled.filled += 1
    filled.unmatched += _not_in_sheet(rows_graded, seen, "the gradebook")
    filled.text = _write(header, rows)
    return filled


def _not_in_sheet(rows: list[dict[str, str]], seen: set[str], sheet: str) -> list[str]:
    left = [r for r in rows if r["student"] not in seen]
    return ([f"not in {sheet}: {safe.inert(r['student'])} (id {r['lms_id']})"
             for r in sorted((r for r in left if r["lms_id"]), key=lambda r: r["lms_id"])]
            + [f"not in {sheet}: {safe.inert(r['student'])} "
               + (f"(student {safe.inert(r['student_id'])} of the roster)" if r.get("student_id") else
                  "(no LMS id: graded from a folder, not an LMS download, and not in a roster)")
               for r in left if not r["lms_id"]])


def moodle(grades: Path, worksheet: Path, roster: Roster | None = None) -> Filled:
    """Moodle's offline grading worksheet with `Grade` and `Feedback comments` filled from `grades`; a row
    is the student's whose download id or roster identity (moodle_id, email) is the worksheet's
    Identifier or Email address."""
    components, rows_graded = read_grades(grades)
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
    index = _match(rows_graded, "moodle", roster, filled)
    seen: set[str] = set()
    for row in rows:
        if not re.fullmatch(r"Participant (\d+)", (row.get("Identifier") or "").strip()):
            continue
        got = _find(index, row, "moodle")
        if got is None:
            filled.unmatched.append(f"no submission graded: {safe.inert(row.get('Full name') or '')} "
                                    f"({row['Identifier']})")
            continue
        seen.add(got["student"])
        row["Grade"] = _total(got)
        row["Feedback comments"] = safe.cell(comment(components, got))
        filled.filled += 1
        total, most = _number(row["Grade"]), _number(row["Maximum Grade"])
        if total is not None and most is not None and total > most:
            filled.unmatched.append(f"above the Maximum Grade ({row['Maximum Grade']}), which Moodle's import "
                                    f"skips: {safe.inert(row.get('Full name') or '')} ({row['Identifier']}) "
                                    f"{row['Grade']}")
    filled.unmatched += _not_in_sheet(rows_graded, seen, "the worksheet")
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
    """One line: the total and the points per component, overrides and points held for review named."""
    changed = set((row.get("overrides") or "").split())
    held = dict(entry.rpartition("=")[::2] for entry in (row.get("held") or "").split())
    parts = [f"{c} {row[c]}" + (" (override)" if c in changed else "")
             + (f" (held for review: {held[c]} earned)" if c in held else "") for c in components]
    status = "" if row["status"] in (RowStatus.GRADED, "") else f" [{row['status']}]"
    late = row.get("late") or ""
    if late and late != "0":
        # grader.batch.late: hours past the due date, and the points the course's [late] policy took
        parts.append(f"late {late} h" + (f" (-{row['late_penalty']})" if row.get("late_penalty", "0") not in
                                         ("", "0") else ""))
    return f"Total {row['total']}{status}: " + ", ".join(parts)
