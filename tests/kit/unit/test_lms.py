"""Canvas's and Moodle's bulk downloads as `grade batch` reads them (grader.batch.lms), and the grades
written back into each LMS's own sheet by `grade export` (grader.batch.export), without grading, on files
in the formats the two LMSs document: Canvas's gradebook export (Student, ID, SIS User ID, SIS Login ID,
Section, the assignments as "NAME (ID)", a "Points Possible" row) and Moodle's offline grading worksheet
(Identifier "Participant N", ..., Grade, Maximum Grade, ..., Feedback comments). The downloads graded:
tests/kit/sandbox/test_lms.py."""

import csv
import io

import pytest

from grader.batch import export, lms
from grader.course_table import ConfigError
from tests.kit.conftest import SOLUTIONS
from tests.kit.lms_files import A1, MOODLE_WORKSHEET, canvas_download


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
