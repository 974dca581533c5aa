"""An LMS's bulk download read as a class: a folder (or zip) per student, and the LMS's id of each.

- Canvas ("Download Submissions"): flat files `NAME[_LATE]_USERID_SUBMISSIONID_FILENAME`, where
  NAME is the student's sortable name run together in lower case and a file handed in again
  gets `-1`, `-2`, ... before its extension (`layer_norm-1.py`): the highest number is the last.
- Moodle ("Download all submissions"): a folder per student `FULL NAME_PARTICIPANTID_assignsubmission_file_`
  (with "Download submissions in folders") or flat files `FULL NAME_PARTICIPANTID_assignsubmission_file_FILENAME`.

`stage` copies such a download into a folder per student (links copied as links, so that grader.batch.collect
refuses them as it does in any class) and returns the LMS's id per student: USERID (Canvas's gradebook
`ID`) or PARTICIPANTID (Moodle's worksheet `Identifier`, "Participant N"). One student per id; two ids
with one name are told apart by the id (`NAME_ID`). A folder that is not wholly such a download is
left as it is.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

CANVAS = re.compile(r"^(?P<name>[^_]+?)(?P<late>_(?i:late))?_(?P<id>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)$")
RESUBMITTED = re.compile(r"^(?P<stem>.+?)-(?P<n>\d+)(?P<ext>\.[^.]*)?$")
IGNORED = {"__MACOSX", ".DS_Store"}


def parse(name: str, is_dir: bool) -> tuple[str, str, str, str] | None:
    """(lms, student name, id, file name) of one entry of a download, or None if it is not one."""
    found = MOODLE.match(name)
    if found and (is_dir or found["file"]):
        return "moodle", found["name"], found["id"], found["file"]
    found = CANVAS.match(name)
    if found and not is_dir:
        return "canvas", found["name"], found["id"], found["file"]
    return None


def kind_and_late(root: Path) -> tuple[str, set[str]]:
    """("canvas" or "moodle", the LMS ids whose files Canvas marked _LATE) of a download `stage` reads;
    ("", set()) for a folder that is not one. Canvas downloads only a student's last submission, and
    marks it against the student's own due date (an extension included)."""
    if not root.is_dir():
        return "", set()
    entries = [p for p in root.iterdir() if p.name not in IGNORED and not p.name.startswith(".")]
    parsed = [parse(p.name, p.is_dir() and not p.is_symlink()) for p in entries]
    if not parsed or any(v is None for v in parsed):
        return "", set()
    kind = parsed[0][0] if parsed[0] else ""
    late = {found["id"] for p in entries if kind == "canvas" and (found := CANVAS.match(p.name)) and found["late"]}
    return kind, late


def original_name(file: str) -> tuple[str, int]:
    """Canvas's `layer_norm-2.py` -> ("layer_norm.py", 2); a name without the suffix -> (name, 0)."""
    found = RESUBMITTED.match(file)
    if not found:
        return file, 0
    return found["stem"] + (found["ext"] or ""), int(found["n"])


def stage(root: Path, into: Path) -> tuple[Path, dict[str, str]]:
    """(the folder to read as a class, {student: the LMS's id}); `root` itself and {} if it is not a download."""
    if not root.is_dir():
        return root, {}
    entries = [p for p in root.iterdir() if p.name not in IGNORED and not p.name.startswith(".")]
    parsed = {p: parse(p.name, p.is_dir() and not p.is_symlink()) for p in entries}
    if not entries or any(v is None for v in parsed.values()):
        return root, {}
    by_id: dict[str, tuple[str, list[tuple[Path, str]]]] = {}
    for path, (_, name, lms_id, file) in sorted((p, v) for p, v in parsed.items() if v is not None):
        by_id.setdefault(lms_id, (name, []))[1].append((path, file))
    names = [name for name, _ in by_id.values()]
    ids: dict[str, str] = {}
    into.mkdir(parents=True)
    for lms_id, (name, files) in sorted(by_id.items()):
        student = name if names.count(name) == 1 else f"{name}_{lms_id}"
        ids[student] = lms_id
        folder = into / student
        if len(files) == 1 and files[0][0].is_dir() and not files[0][0].is_symlink():
            shutil.copytree(files[0][0], folder, symlinks=True)
            continue
        if len(files) == 1 and files[0][1].lower().endswith(".zip"):
            shutil.copy2(files[0][0], into / f"{student}.zip", follow_symlinks=False)
            continue
        folder.mkdir()
        latest: dict[str, tuple[int, Path]] = {}
        for path, file in files:
            if path.is_dir() and not path.is_symlink():
                shutil.copytree(path, folder, symlinks=True, dirs_exist_ok=True)
                continue
            plain, n = original_name(file)
            if plain not in latest or n > latest[plain][0]:
                latest[plain] = (n, path)
        for plain, (_, path) in latest.items():
            shutil.copy2(path, folder / plain, follow_symlinks=False)
    return into, ids
