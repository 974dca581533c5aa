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

import pytest

from grader.batch import export, lms
from grader.course_table import ConfigError
from tests.kit.conftest import SOLUTIONS, mutant, run_grade
from tests.kit.test_batch import CLASS, LN_BUG, batch, read_csv

A1 = sorted(p.name for p in (SOLUTIONS / "assignment1").glob("*.py"))

# Canvas's gradebook export (Grades > Export) as canvas-lms writes it (lib/gradebook_exporter.rb in
# instructure/canvas-lms): Student, ID, SIS User ID, SIS Login ID, Section, the assignments as "TITLE (ID)",
# the read-only totals, then a row "    Points Possible" with no ID; Canvas's test student comes last. The
# columns as documented at
# https://nemogb-dev.github.io/nemogb-r/articles/detailed-canvas-export-info.html
# https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades
CANVAS_GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (88001),Quiz 1 (88002),Current Score,Final Score\n"
    "    Points Possible,,,,,40.00,5.00,(read only),(read only)\n"
    '"Lovelace, Ada",1001,s1001,ada,Section A,,4.00,80.00,80.00\n'
    '"Babbage, Bob",1002,s1002,bob,Section A,,5.00,100.00,100.00\n'
    '"Student, Test",1999,,,Section A,,,,\n')
# Moodle's offline grading worksheet (Assignment > View all submissions > Download grading worksheet, with the
# "Offline grading worksheet" and "Feedback comments" feedback types on, as
# https://docs.moodle.org/401/en/Assignment_settings says), its columns as mod/assign/gradingtable.php in
# moodle/moodle writes them for a download: Identifier ("Participant " + the id also in the download's file
# names), Full name, the identity fields (Email address), Status, Grade, Maximum Grade, Grade can be changed,
# Last modified (submission), Last modified (grade), then each feedback plugin's field (Feedback comments);
# mod/assign/feedback/offline/importgradeslib.php reads Identifier, Grade and Last modified (grade) back
MOODLE_WORKSHEET = (
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
    "Participant 501,Ana C,ana@example.edu,Submitted for grading,,40.00,Yes,"
    '"Friday, 27 November 2026, 9:00 AM",-,\n'
    "Participant 502,Ben D,ben@example.edu,No submission,,40.00,Yes,-,-,\n")


@pytest.mark.parametrize("name, parsed", [
    ("lovelaceada_1001_5550001_layer_norm.py", ("canvas", "lovelaceada", "1001", "layer_norm.py")),
    ("lovelaceada_LATE_1001_5550001_layer_norm-2.py", ("canvas", "lovelaceada", "1001", "layer_norm-2.py")),
    ("lovelaceada_late_1001_5550001_work.zip", ("canvas", "lovelaceada", "1001", "work.zip")),
    ("Ana C_501_assignsubmission_file_layer_norm.py", ("moodle", "Ana C", "501", "layer_norm.py")),
    ("José María O_Brien_77_assignsubmission_file_", ("moodle", "José María O_Brien", "77", "")),
    ("ada", None), ("layer_norm.py", None), ("ada_1001_layer_norm.py", None),
])
def test_lms_file_names_are_read(name, parsed):
    is_dir = parsed is not None and parsed[0] == "moodle" and not parsed[3]
    assert lms.parse(name, is_dir) == parsed


@pytest.mark.parametrize("file, plain", [("layer_norm-1.py", ("layer_norm.py", 1)),
                                         ("layer_norm-12.py", ("layer_norm.py", 12)),
                                         ("layer_norm.py", ("layer_norm.py", 0)),
                                         ("feed-forward.py", ("feed-forward.py", 0))])
def test_canvas_resubmission_suffixes_come_off(file, plain):
    assert lms.original_name(file) == plain


def canvas_download(root: Path, tmp: Path) -> Path:
    """Ada hands in the solution; Bob a broken file, then the LN bug as resubmission -1, late; two
    students named alike (ids 1003 and 1004) hand in nothing of the assignment."""
    root.mkdir(parents=True)
    bug = mutant(tmp / "m", LN_BUG) / "assignment1"
    for name in A1:
        (root / f"lovelaceada_1001_7001_{name}").write_bytes((SOLUTIONS / "assignment1" / name).read_bytes())
        (root / f"babbagebob_LATE_1002_7002_{name.replace('.py', '-1.py')}").write_bytes((bug / name).read_bytes())
    (root / "babbagebob_1002_6002_layer_norm.py").write_text("raise SystemExit\n")
    (root / "smithsam_1003_7003_notes.txt").write_text("hello\n")
    (root / "smithsam_1004_7004_notes.txt").write_text("hi\n")
    return root


def test_a_canvas_download_is_one_student_per_id(tmp_path):
    download = canvas_download(tmp_path / "dl", tmp_path)
    assert lms.kind_and_late(download) == ("canvas", {"1002"})  # Bob's last submission is marked _LATE
    assert lms.kind_and_late(tmp_path / "m") == ("", set())  # a folder of folders: no LMS's download
    folder, ids = lms.stage(download, tmp_path / "staged")
    assert ids == {"lovelaceada": "1001", "babbagebob": "1002", "smithsam_1003": "1003", "smithsam_1004": "1004"}
    assert sorted(p.name for p in (folder / "babbagebob").iterdir()) == A1  # the -1 files, renamed
    assert (folder / "babbagebob" / "layer_norm.py").read_text() != "raise SystemExit\n"


def test_a_moodle_download_in_folders_or_flat_files(tmp_path):
    folders, flat = tmp_path / "folders", tmp_path / "flat"
    for name in A1:
        target = folders / "Ana C_501_assignsubmission_file_" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((SOLUTIONS / "assignment1" / name).read_bytes())
        flat.mkdir(exist_ok=True)
        (flat / f"Ben D_502_assignsubmission_file_{name}").write_bytes((SOLUTIONS / "assignment1" / name).read_bytes())
    staged, ids = lms.stage(folders, tmp_path / "s1")
    assert ids == {"Ana C": "501"} and sorted(p.name for p in (staged / "Ana C").iterdir()) == A1
    staged, ids = lms.stage(flat, tmp_path / "s2")
    assert ids == {"Ben D": "502"} and sorted(p.name for p in (staged / "Ben D").iterdir()) == A1
    # a folder per student of the kit's own kind is left as it is
    (tmp_path / "class" / "ada").mkdir(parents=True)
    assert lms.stage(tmp_path / "class", tmp_path / "s3") == (tmp_path / "class", {})


GRADES = ("student,LayerNorm,PositionwiseFeedForward,PositionalEncoding,TokenEmbedding,TransformerEmbedding,"
          "total,status,lms_id,overrides\n"
          "Ana C,10,8,10,6,6,40,graded,501,\n"
          "Cy E,9,8,10,6,6,39,graded,503,LayerNorm\n"
          "folder_student,0,0,0,0,0,0,empty,,\n")


def test_the_moodle_worksheet_gets_grades_and_a_one_line_comment(tmp_path):
    (tmp_path / "grades.csv").write_text(GRADES)
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    filled = export.moodle(tmp_path / "grades.csv", tmp_path / "worksheet.csv")
    rows = list(csv.DictReader(io.StringIO(filled.text)))
    assert list(rows[0]) == next(csv.reader(io.StringIO(MOODLE_WORKSHEET)))
    assert (rows[0]["Grade"], rows[0]["Maximum Grade"]) == ("40", "40.00")
    assert rows[0]["Feedback comments"].startswith("Total 40: LayerNorm 10, PositionwiseFeedForward 8")
    assert (rows[1]["Grade"], rows[1]["Feedback comments"]) == ("", "")  # no submission: as it was
    assert filled.unmatched == ["no submission graded: Ben D (Participant 502)", "not in the worksheet: Cy E (id 503)",
                                "not in the worksheet: folder_student (no LMS id: graded from a folder, not an "
                                "LMS download, and not in a roster)"]


def test_points_held_for_review_are_named_in_the_comment_not_shown_as_a_bare_0(tmp_path):
    """grades.csv's `held` (grader.batch.outputs.held_column): a component held for review counts 0 in its
    column and the total; the LMS's comment says it is held and what it earned, so that neither the
    student nor the instructor reads the 0 as failed."""
    held = GRADES.replace("overrides\n", "overrides,held\n", 1)
    held = held.replace("Ana C,10,8,10,6,6,40,graded,501,", "Ana C,0,8,10,6,6,30,graded,501,,LayerNorm=10")
    (tmp_path / "grades.csv").write_text(held)
    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    rows = list(csv.DictReader(io.StringIO(export.moodle(tmp_path / "grades.csv", tmp_path / "worksheet.csv").text)))
    assert rows[0]["Grade"] == "30"
    assert rows[0]["Feedback comments"].startswith(
        "Total 30: LayerNorm 0 (held for review: 10 earned), PositionwiseFeedForward 8"), rows[0]


def test_canvas_gradebooks_with_first_and_last_names_and_a_manual_posting_row_are_filled(tmp_path):
    # canvas-lms writes LastName, FirstName where the gradebook shows them apart, and a row above Points
    # Possible, with no ID, naming the assignments that are posted by hand
    (tmp_path / "grades.csv").write_text(GRADES)
    (tmp_path / "gradebook.csv").write_text(
        "LastName,FirstName,ID,SIS Login ID,Section,Assignment 1 (88001),Current Score\n"
        ",,,,,Manual Posting,\n"
        "    Points Possible,,,,,40.00,(read only)\n"
        "C,Ana,501,ana,Section A,,\n"
        "D,Ben,502,ben,Section A,,\n")
    filled = export.canvas(tmp_path / "grades.csv", tmp_path / "gradebook.csv", "Assignment 1")
    rows = list(csv.reader(io.StringIO(filled.text)))
    assert rows[1][5] == "Manual Posting" and rows[2][5] == "40.00"  # Canvas's rows, as it wrote them
    assert [(r[1], r[5]) for r in rows[3:]] == [("Ana", "40"), ("Ben", "")]
    assert filled.unmatched[0] == "no submission graded: D, Ben (ID 502)"


def test_moodle_worksheets_its_import_would_refuse_or_skip_are_named(tmp_path):
    (tmp_path / "grades.csv").write_text(GRADES)
    # the import reads Last modified (grade): a sheet without it is not one Moodle takes back
    (tmp_path / "w.csv").write_text(MOODLE_WORKSHEET.replace("Last modified (grade),", ""))
    with pytest.raises(ConfigError, match=r"no Last modified \(grade\) column"):
        export.moodle(tmp_path / "grades.csv", tmp_path / "w.csv")
    # an assignment graded on a scale has a Scale column, not Maximum Grade: points do not fit it
    (tmp_path / "w.csv").write_text(MOODLE_WORKSHEET.replace("Maximum Grade", "Scale"))
    with pytest.raises(ConfigError, match="scale"):
        export.moodle(tmp_path / "grades.csv", tmp_path / "w.csv")
    # Moodle's import skips a grade above the maximum: the assignment's maximum is not the course's
    (tmp_path / "w.csv").write_text(MOODLE_WORKSHEET.replace("40.00", '"20,00"'))  # a comma locale's
    filled = export.moodle(tmp_path / "grades.csv", tmp_path / "w.csv")
    assert filled.unmatched[0] == ("above the Maximum Grade (20,00), which Moodle's import skips: Ana C "
                                   "(Participant 501) 40")


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
    """The graded class of tests/kit/test_batch.py, run again (nothing graded again: the [late] table
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
