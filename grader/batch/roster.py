"""A class roster: one CSV row per student, mapping every identity the student has elsewhere to one id.

Columns (a header row; `student` required, any of the others, in any order):
- `student`: the id the kit gives the student everywhere (grades.csv's `student_id`, the feedback);
- `folder`: the name of the student's folder or zip in a batch (without it, a folder named as the
  `student` id is that student's);
- `email`, `sid`, `name`: the student on Gradescope (submission_metadata.json's `users`);
- `canvas_id`, `sis_id`, `canvas_login`: Canvas's user id (the gradebook's `ID`, a download's USERID),
  SIS User ID and SIS Login ID;
- `moodle_id`: Moodle's participant id (the worksheet's `Identifier`, "Participant N", or N alone).

A bad roster (no `student` column, a column of another name, a student listed twice, one identity
given to two students) is a ConfigError naming the file, the line and the value.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch import safe
from grader.course_table import ConfigError

COLUMNS = ("student", "folder", "email", "sid", "name", "canvas_id", "sis_id", "canvas_login", "moodle_id")
# identities that are one student's alone; `name` is not (two students may share one): it matches only if unique
UNIQUE = ("folder", "email", "sid", "canvas_id", "sis_id", "canvas_login", "moodle_id")


def _key(column: str, value: str) -> str:
    value = value.strip()
    if column == "moodle_id":
        value = re.sub(r"^Participant\s+", "", value)
    return value.casefold() if column in ("email", "canvas_login", "name") else value


@dataclass
class Roster:
    path: Path
    students: dict[str, dict[str, str]] = field(default_factory=dict)  # student id -> its row
    index: dict[str, dict[str, str]] = field(default_factory=dict)  # column -> identity (keyed) -> student id

    def by(self, column: str, value: str | None) -> str | None:
        return self.index.get(column, {}).get(_key(column, value)) if value else None

    def find(self, *, folder: str, lms: str = "", lms_id: str = "", users: list[dict] | None = None) -> str | None:
        """The student id of a batch's submission: by its LMS id (a download's), its Gradescope users
        (any of them: a group's submission is each member's), then its folder's name; None if none matches."""
        if lms_id and lms in ("canvas", "moodle"):
            found = self.by(f"{lms}_id", lms_id)
            if found:
                return found
        for user in users or []:
            for column in ("email", "sid", "name"):
                found = self.by(column, str(user.get(column) or ""))
                if found:
                    return found
        found = self.by("folder", folder)
        if found:
            return found
        row = self.students.get(folder)  # a student without a folder of their own: the folder named as the id
        return folder if row is not None and not row.get("folder") else None

    def identity(self, student: str, column: str) -> str:
        return (self.students.get(student) or {}).get(column, "").strip()


def load(path: Path, what: str = "--roster") -> Roster:
    """The roster at `path`, checked (see the module's docstring)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{what}: cannot read {str(path)!r} ({e.__class__.__name__})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [(h or "").strip() for h in reader.fieldnames or []]
    if "student" not in header:
        raise ConfigError(f"{what}: {path.name} has no student column (its columns: {', '.join(header) or 'none'}; "
                          f"a roster has student and any of {', '.join(COLUMNS[1:])})")
    unknown = [h for h in header if h not in COLUMNS]
    if unknown or len(set(header)) != len(header):
        bad = unknown[0] if unknown else next(h for h in header if header.count(h) > 1)
        raise ConfigError(f"{what}: {path.name}: column {safe.inert(bad)!r} is {'unknown' if unknown else 'twice'} "
                          f"(a roster's columns: {', '.join(COLUMNS)})")
    roster = Roster(path)
    names: dict[str, list[str]] = {}
    first: dict[tuple[str, str], int] = {}
    for line, raw in enumerate(reader, 2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if isinstance(k, str)}
        if not any(row.values()):
            continue
        student = row.get("student", "")
        if not student:
            raise ConfigError(f"{what}: {path.name} line {line}: no student id")
        if student in roster.students:
            raise ConfigError(f"{what}: {path.name} line {line}: student {safe.inert(student)!r} is listed twice "
                              f"(line {first[('student', student)]})")
        first[("student", student)] = line
        roster.students[student] = row
        for column in UNIQUE:
            value = _key(column, row.get(column, ""))
            if not value:
                continue
            if value in roster.index.setdefault(column, {}):
                raise ConfigError(f"{what}: {path.name} line {line}: {column} {safe.inert(row[column])!r} is "
                                  f"student {safe.inert(roster.index[column][value])!r}'s already "
                                  f"(line {first[(column, value)]})")
            roster.index[column][value] = student
            first[(column, value)] = line
        if row.get("name"):
            names.setdefault(_key("name", row["name"]), []).append(student)
    roster.index["name"] = {name: ids[0] for name, ids in names.items() if len(ids) == 1}
    return roster
