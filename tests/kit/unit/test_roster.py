"""A roster (grader.batch.roster): folders, Gradescope and LMS identities mapped to one student id; the
exports matched through it (grader.batch.export); a bad roster is one line naming what is wrong."""

import csv
import io
from pathlib import Path

import pytest

from grader.batch import export, roster
from grader.course_table import ConfigError
from tests.kit.lms_files import CANVAS_GRADEBOOK, MOODLE_WORKSHEET

ROSTER = ("student,folder,email,sid,name,canvas_id,sis_id,canvas_login,moodle_id\n"
          "u-ada,ada_folder,Ada@example.edu,s1001,Ada L,1001,,,Participant 501\n"
          "u-bob,,bob@example.edu,s1002,Bob B,,s1002,bob,502\n"
          "u-sam,,,,Sam S,,,,\n"
          "u-sam2,,,,Sam S,,,,\n")
# graded from folders: no lms_id; the roster's student_id
GRADES = ("student,LayerNorm,total,status,lms_id,overrides,isolation,student_id,late,late_penalty\n"
          "ada_folder,10,10,graded,,,namespaces,u-ada,0,0\n"
          "u-bob,8,7.2,graded,,,namespaces,u-bob,30,0.8\n"
          "stray,5,5,graded,,,namespaces,,,\n")


def write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


def test_each_identity_finds_its_student(tmp_path):
    found = roster.load(write(tmp_path, "roster.csv", ROSTER))
    assert found.find(folder="ada_folder") == "u-ada"
    assert found.find(folder="u-bob") == "u-bob"  # no folder column value: the folder named as the id
    assert found.find(folder="u-ada") is None  # Ada's folder is named: her id is not a folder of hers
    assert found.find(folder="x", lms="canvas", lms_id="1001") == "u-ada"
    assert found.find(folder="x", lms="moodle", lms_id="502") == "u-bob"
    assert found.find(folder="x", lms="moodle", lms_id="1001") is None  # a Canvas id is no Moodle id
    assert found.find(folder="submission_1", users=[{"email": "ADA@example.edu"}]) == "u-ada"
    assert found.find(folder="submission_2", users=[{"sid": "s1002"}]) == "u-bob"
    assert found.find(folder="submission_3", users=[{"name": "Sam S"}]) is None  # two Sam S: no guess
    assert found.find(folder="stray") is None


@pytest.mark.parametrize("text, message", [
    ("id,email\nx,a@b\n", "has no student column (its columns: id, email"),
    ("student,e-mail\nx,a@b\n", "column 'e-mail' is unknown"),
    ("student,email,email\nx,a,b\n", "column 'email' is twice"),
    ("student,email\nx,a@b\ny,c@d\nx,e@f\n", "line 4: student 'x' is listed twice (line 2)"),
    ("student,email\nx,a@b\ny,A@b\n", "line 3: email 'A@b' is student 'x''s already (line 2)"),
    ("student,canvas_id\nx,1\n,2\n", "line 3: no student id"),
])
def test_a_bad_roster_is_one_line_naming_what_is_wrong(tmp_path, text, message):
    with pytest.raises(ConfigError) as error:
        roster.load(write(tmp_path, "roster.csv", text))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_grades_of_folders_go_into_canvas_and_moodle_through_the_roster(tmp_path):
    grades, mapping = write(tmp_path, "grades.csv", GRADES), roster.load(write(tmp_path, "roster.csv", ROSTER))
    # Canvas: Ada by her Canvas id, Bob by his SIS User ID (the gradebook's ID column has none of his)
    filled = export.canvas(grades, write(tmp_path, "gradebook.csv", CANVAS_GRADEBOOK), "Assignment 1", mapping)
    rows = list(csv.reader(io.StringIO(filled.text)))
    assert [(r[0], r[5]) for r in rows[2:]] == [("Lovelace, Ada", "10"), ("Babbage, Bob", "7.2"),
                                                ("Student, Test", "")]
    assert filled.filled == 2 and filled.unmatched == [
        "no submission graded: Student, Test (ID 1999)",
        "not in the gradebook: stray (no LMS id: graded from a folder, not an LMS download, and not in a roster)"]
    # Moodle: by the participant id the roster gives, with the late hours and penalty in the comment
    filled = export.moodle(grades, write(tmp_path, "worksheet.csv", MOODLE_WORKSHEET), mapping)
    rows = list(csv.DictReader(io.StringIO(filled.text)))
    assert [(r["Identifier"], r["Grade"]) for r in rows] == [("Participant 501", "10"), ("Participant 502", "7.2")]
    assert rows[1]["Feedback comments"] == "Total 7.2: LayerNorm 8, late 30 h (-0.8)"
    assert rows[0]["Feedback comments"] == "Total 10: LayerNorm 10"  # on time: nothing said
    # without the roster, nothing matches: `grade export` says so (tests/kit/sandbox/test_lms.py runs the command)
    nothing = export.moodle(grades, tmp_path / "worksheet.csv")
    assert (nothing.filled, nothing.graded, nothing.unidentified) == (0, 3, 3)
