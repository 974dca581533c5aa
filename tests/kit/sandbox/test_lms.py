"""Canvas's and Moodle's bulk downloads graded by `grade batch` (grader.batch.lms), and the grades written
back into each LMS's own sheet by `grade export` (grader.batch.export), on files in the formats the
two LMSs document: Canvas's gradebook export (Student, ID, SIS User ID, SIS Login ID, Section, the
assignments as "NAME (ID)", a "Points Possible" row) and Moodle's offline grading worksheet
(Identifier "Participant N", ..., Grade, Maximum Grade, ..., Feedback comments)."""

import csv
import io
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.kit.conftest import run_grade
from tests.kit.lms_files import CANVAS_GRADEBOOK, MOODLE_WORKSHEET, canvas_download
from tests.kit.sandbox.test_batch import CLASS, batch, read_csv


def test_lms_downloads_are_graded_and_go_back_into_each_lms(tmp_path, quick_course):
    out = tmp_path / "out"
    download = canvas_download(tmp_path / "canvas", tmp_path)
    # Canvas marked Bob's last submission _LATE: 30 h by its files' times, 2 days at 10% under [late]
    for path in download.iterdir():
        late = "_LATE_" in path.name
        os.utime(path, ((DUE + timedelta(hours=30 if late else -1)).timestamp(),) * 2)
    (tmp_path / "course.toml").write_text(quick_course.read_text() + LATE_TABLE)
    proc = batch(str(download), "--assignment", "assignment1", "--out", str(out), "--course",
                 str(tmp_path / "course.toml"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    rows = read_csv(out / "grades.csv")
    assert {s: (r["lms_id"], r["total"], r["status"], r["late"], r["late_penalty"]) for s, r in rows.items()} == {
        "lovelaceada": ("1001", "40", "graded", "0", "0"), "babbagebob": ("1002", "26", "graded", "30", "6.5"),
        "smithsam_1003": ("1003", "0", "empty", "0", "0"), "smithsam_1004": ("1004", "0", "empty", "0", "0")}
    (tmp_path / "gradebook.csv").write_text(CANVAS_GRADEBOOK)
    export_ = run_grade("export", "canvas", str(out / "grades.csv"), "--gradebook", str(tmp_path / "gradebook.csv"),
                        "--column", "Assignment 1", "--out", str(tmp_path / "import.csv"))
    assert export_.returncode == 0, export_.stderr
    filled = list(csv.reader(open(tmp_path / "import.csv")))
    original = list(csv.reader(io.StringIO(CANVAS_GRADEBOOK)))
    assert filled[:2] == original[:2]  # the header and the Points Possible row, as Canvas wrote them
    assert [(r[0], r[5]) for r in filled[2:]] == [("Lovelace, Ada", "40"), ("Babbage, Bob", "26"),
                                                  ("Student, Test", "")]
    assert [r[6] for r in filled[2:]] == ["4.00", "5.00", ""]  # other columns untouched
    assert export_.stdout.splitlines()[:3] == ["no submission graded: Student, Test (ID 1999)",
                                               "not in the gradebook: smithsam_1003 (id 1003)",
                                               "not in the gradebook: smithsam_1004 (id 1004)"]
    bad = run_grade("export", "canvas", str(out / "grades.csv"), "--gradebook", str(tmp_path / "gradebook.csv"),
                    "--column", "Assignment 9")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "'Assignment 9'" in bad.stderr

    # Moodle: graded from folders as Canvas's flat files are above; here nothing to grade (cheap): the ids
    moodle = tmp_path / "moodle" / "Ana C_501_assignsubmission_file_"
    moodle.mkdir(parents=True)
    (moodle / "notes.txt").write_text("my answers are in the notebook\n")
    (tmp_path / "moodle" / "Ben D_502_assignsubmission_file_").mkdir()
    out = tmp_path / "out_moodle"
    proc = batch(str(tmp_path / "moodle"), "--assignment", "assignment1", "--out", str(out),
                 "--course", str(quick_course))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert {s: r["lms_id"] for s, r in read_csv(out / "grades.csv").items()} == {"Ana C": "501", "Ben D": "502"}
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    export_ = run_grade("export", "moodle", str(out / "grades.csv"), "--worksheet", str(tmp_path / "worksheet.csv"))
    assert export_.returncode == 0, export_.stderr
    rows = list(csv.DictReader(open(out / "moodle-import.csv")))
    assert [(r["Identifier"], r["Grade"]) for r in rows] == [("Participant 501", "0"), ("Participant 502", "0")]
    assert rows[0]["Feedback comments"].startswith("Total 0 [empty]: LayerNorm 0,")


DUE = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
LATE_TABLE = ("\n[late]\ngrace_hours = 2\npenalty_per_day = 10\ncap = 30\ncutoff_days = 5\n"
              "[late.due]\nassignment1 = 2026-11-27T09:00:00Z\n")


def set_times(folder: Path, when: datetime) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            os.utime(path, (when.timestamp(), when.timestamp()))


@CLASS
def test_a_folder_batch_goes_to_canvas_and_moodle_through_a_roster_late_penalties_applied(graded, class_dir,
                                                                                         quick_course, tmp_path):
    """The graded class of tests/kit/sandbox/test_batch.py, run again (nothing graded again: the [late] table
    decides no grading) with a roster and a late policy: the lateness by file times (inside the grace,
    just after it, the cap), a zip's own times and Gradescope's metadata (past the cut-off)."""
    import json
    import shutil
    import zipfile

    klass, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(class_dir, klass, symlinks=True)
    shutil.copytree(graded[0], out, symlinks=True)
    for entry in klass.iterdir():
        set_times(entry, DUE - timedelta(hours=1))
    set_times(klass / "correct", DUE + timedelta(hours=1))  # inside the 2 h grace
    set_times(klass / "flat_files", DUE + timedelta(hours=2, minutes=30))  # just after it: 1 day, 10%
    with zipfile.ZipFile(class_dir / "zipped.zip") as old, zipfile.ZipFile(klass / "zipped.zip", "w") as new:
        for info in old.infolist():  # 80 h late: 4 days, 40% capped at 30%
            info.date_time = (DUE + timedelta(hours=80)).astimezone().timetuple()[:6]
            new.writestr(info, old.read(info))
    (klass / "partial" / "submission_metadata.json").write_text(json.dumps({
        "created_at": (DUE + timedelta(hours=121)).isoformat(), "assignment": {"due_date": DUE.isoformat()},
        "users": [{"email": "pat@example.edu", "sid": "s1003", "name": "Pat P"}], "previous_submissions": []}))
    (tmp_path / "course.toml").write_text(quick_course.read_text() + LATE_TABLE)
    (tmp_path / "roster.csv").write_text(
        "student,folder,email,canvas_id,sis_id,moodle_id\n"
        "u-ada,correct,,1001,,501\nu-bob,flat_files,,,s1002,Participant 502\nu-zed,zipped,,,,\n"
        "u-pat,,pat@example.edu,,,\nu-nobody,,,,,\n")
    proc = batch(str(klass), "--assignment", "assignment1", "--out", str(out), "--course",
                 str(tmp_path / "course.toml"), "--roster", str(tmp_path / "roster.csv"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "0 graded," in proc.stdout  # the grades were reused: only the roster and the policy are new
    assert "not in the roster: empty (graded; no student_id)" in proc.stdout
    assert "no submission: u-nobody (in the roster)" in proc.stdout
    rows = read_csv(out / "grades.csv")
    partial = float(read_csv(graded[0] / "grades.csv")["partial"]["total"])
    assert {s: (rows[s]["student_id"], rows[s]["total"], rows[s]["late"], rows[s]["late_penalty"])
            for s in ("correct", "flat_files", "zipped", "partial", "empty")} == {
        "correct": ("u-ada", "40", "1", "0"), "flat_files": ("u-bob", "36", "2.5", "4"),
        "zipped": ("u-zed", "28", "80", "12"), "partial": ("u-pat", "0", "121", f"{partial:g}"),
        "empty": ("", "0", "", "")}  # no file: no time to measure
    report = json.loads((out / "reports" / "partial.json").read_text())
    assert report["late"]["source"] == "gradescope" and "past the 5-day cut-off" in report["notes"][-1]
    assert "\nLateness\n  Late: 2.5 h after the due date (file times), 1 day(s): -10%: 40 -> 36" in \
        (out / "feedback" / "flat_files.txt").read_text()
    assert "u-bob (flat_files)" in (out / "feedback" / "flat_files.html").read_text()
    assert {r["student"]: r["why"] for r in csv.DictReader(open(out / "changes.csv"))}["flat_files"] == "late"

    (tmp_path / "gradebook.csv").write_text(CANVAS_GRADEBOOK)
    done = run_grade("export", "canvas", str(out / "grades.csv"), "--gradebook", str(tmp_path / "gradebook.csv"),
                     "--column", "Assignment 1")  # the roster OUT kept
    assert done.returncode == 0, done.stderr
    filled = list(csv.reader(open(out / "canvas-import.csv")))
    assert [(r[0], r[5]) for r in filled[2:]] == [("Lovelace, Ada", "40"), ("Babbage, Bob", "36"),
                                                  ("Student, Test", "")]
    assert done.stdout.splitlines()[-1] == f"2 grades written to {out / 'canvas-import.csv'}; import it into Canvas."
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    done = run_grade("export", "moodle", str(out / "grades.csv"), "--worksheet", str(tmp_path / "worksheet.csv"))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(out / "moodle-import.csv")))
    assert [(r["Identifier"], r["Grade"]) for r in rows] == [("Participant 501", "40"), ("Participant 502", "36")]
    assert rows[1]["Feedback comments"].endswith(", late 2.5 h (-4)")

    # the class graded from folders without a roster: no grade to write is an error that says why
    nothing = run_grade("export", "canvas", str(graded[0] / "grades.csv"), "--gradebook",
                        str(tmp_path / "gradebook.csv"), "--column", "Assignment 1", "--out", str(tmp_path / "x.csv"))
    assert nothing.returncode == 2 and len(nothing.stderr.strip().splitlines()) == 1, nothing.stderr
    assert "no grade written: none of the" in nothing.stderr and "map them with a roster" in nothing.stderr
    assert not (tmp_path / "x.csv").exists()
    bad = batch(str(klass), "--assignment", "assignment1", "--out", str(tmp_path / "o2"), "--roster",
                str(tmp_path / "gradebook.csv"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "no student column" in bad.stderr
