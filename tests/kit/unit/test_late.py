"""Lateness (grader.batch.late): read from Gradescope's metadata, Canvas's _LATE marker and file times;
course.toml's [late] policy checked key by key, and applied on both sides of each of its edges."""

import json
import os
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from grader.batch import late
from grader.course import load
from grader.course_table import ConfigError
from grader.late_policy import Late
from grader.report_json import graded
from tests.kit.conftest import ROOT

DUE = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
# 2 h grace, 10% a day, at most 30%, nothing after 5 days
POLICY = Late(grace_hours=2, penalty_per_day=10, cap=30, cutoff_days=5, due={"assignment1": DUE})


def course_with(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "course.toml"
    path.write_text((ROOT / "course.toml").read_text() + "\n" + table)
    return path


@pytest.mark.parametrize("hours, days, taken", [
    (0, 0, 0), (-3, 0, 0),  # on time
    (2, 1, 0), (2.01, 1, 10),  # the grace's edge: inside, just after
    (24, 1, 10), (24.01, 2, 20),  # a started day counts whole
    (48, 2, 20), (72, 3, 30), (96, 4, 30),  # the cap's edge: below, reached, held
    (120, 5, 30), (120.01, 6, 100),  # the cut-off's edge: on it, just past
])
def test_the_penalty_on_both_sides_of_each_edge(hours, days, taken):
    assert late.percent(hours, POLICY) == (days, taken)


def test_late_by_an_unknown_amount_loses_nothing():
    assert late.percent(None, POLICY) == (0, 0.0)


def test_the_penalty_is_taken_from_the_grade_after_overrides_and_applied_once():
    report = {"score": 36.0, "graded_score": 30.0, "notes": ["kept"], "components": []}
    once = late.apply(report, late.Lateness(30.0, "gradescope"), POLICY)
    assert (once["score"], once["late"]["points"], once["late"]["percent"]) == (28.8, 7.2, 20)
    assert once["notes"][0] == "kept" and once["notes"][1].startswith("Late: 30.0 h after the due date (gradescope)")
    assert late.apply(once, late.Lateness(30.0, "gradescope"), POLICY) == once  # again: the same, not 20% of 28.8
    assert late.undo(once) == report
    past = late.apply(once, late.Lateness(121.0, "file times"), POLICY)
    assert past["score"] == 0 and "past the 5-day cut-off" in past["late"]["note"]
    assert late.column(graded(past)) == ("121", "36")
    on_time = late.apply(past, late.Lateness(0.0, "canvas"), POLICY)
    assert on_time["score"] == 36.0 and late.column(graded(on_time)) == ("0", "0")
    assert late.column(graded(late.apply(report, None, POLICY))) == ("", "")  # no source says: no column, no penalty


def write_metadata(folder: Path, created: datetime, due: datetime, own_due: datetime | None = None,
                   earlier: tuple[datetime, ...] = ()) -> None:
    """Gradescope's submission_metadata.json, the fields it documents (users with their own assignment dates)."""
    user = {"email": "ada@example.edu", "id": 7, "name": "Ada L", "sid": "s1001"}
    if own_due:
        user["assignment"] = {"due_date": own_due.isoformat(), "release_date": None, "late_due_date": None}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / late.METADATA).write_text(json.dumps({
        "id": 1, "created_at": created.isoformat(), "submission_method": "upload", "users": [user],
        "assignment": {"due_date": due.isoformat(), "late_due_date": None, "title": "Assignment 1",
                       "total_points": "40.0"},
        "previous_submissions": [{"submission_time": t.isoformat(), "score": 10.0, "results": {}} for t in earlier]}))


def test_gradescope_metadata_gives_the_submission_time_against_the_students_own_due_date(tmp_path):
    write_metadata(tmp_path / "a", DUE + timedelta(hours=30), DUE, earlier=(DUE - timedelta(hours=1),))
    found = late.measure(tmp_path / "a", due=None, canvas_late=None)
    assert found == late.Lateness(30.0, "gradescope", "1 earlier submission, 1 on time; the last is graded")
    # an extension to the student: their own due date, a day later
    write_metadata(tmp_path / "b", DUE + timedelta(hours=30), DUE, own_due=DUE + timedelta(days=1))
    assert late.measure(tmp_path / "b", due=None, canvas_late=None).hours == 6.0
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as z:  # in a zip, one wrapping folder down
        z.write(tmp_path / "a" / late.METADATA, f"c/{late.METADATA}")
    assert late.measure(tmp_path / "c.zip", due=None, canvas_late=None).hours == 30.0


def test_file_times_are_the_source_only_where_no_other_is(tmp_path):
    folder = tmp_path / "ada" / "assignment1"
    folder.mkdir(parents=True)
    (folder / "layer_norm.py").write_text("x = 1\n")
    os.utime(folder / "layer_norm.py", (0, (DUE + timedelta(hours=3)).timestamp()))
    assert late.measure(tmp_path / "ada", due=DUE, canvas_late=None) == late.Lateness(3.0, "file times")
    assert late.measure(tmp_path / "ada", due=None, canvas_late=None) is None  # no due date: no lateness
    # Canvas: unmarked is on time whatever the files' times; marked is late by them, or by an unknown amount
    assert late.measure(tmp_path / "ada", due=DUE, canvas_late=False) == late.Lateness(0.0, "canvas")
    assert late.measure(tmp_path / "ada", due=DUE, canvas_late=True).hours == 3.0
    assert late.measure(tmp_path / "ada", due=None, canvas_late=True) == late.Lateness(None, "canvas")
    # Gradescope's own times come first
    write_metadata(tmp_path / "ada", DUE - timedelta(hours=1), DUE)
    assert late.measure(tmp_path / "ada", due=DUE, canvas_late=None) == late.Lateness(0.0, "gradescope")


def test_a_late_policy_is_read_from_course_toml(tmp_path):
    course = load(course_with(tmp_path, "[late]\ngrace_hours = 2\npenalty_per_day = 10\ncap = 30\ncutoff_days = 5\n"
                                        "[late.due]\nassignment1 = 2026-11-27T09:00:00Z\n"))
    assert course.late == POLICY
    assert load(ROOT / "course.toml").late is None


@pytest.mark.parametrize("table, message", [
    ("grace_hours = -1", "late.grace_hours: expected a number of hours >= 0, got -1"),
    ("penalty_per_day = 101", "late.penalty_per_day: expected a percentage from 0 to 100, got 101"),
    ("cap = \"30%\"", "late.cap: expected a percentage from 0 to 100, got '30%'"),
    ("cutoff_days = 0", "late.cutoff_days: expected a number of days above 0, got 0"),
    ("penalty = 10", "late.penalty: unknown key (value 10)"),
    ("due = 3", "late.due: expected a table, got 3"),
    ("[late.due]\nassignment9 = 2026-11-27T09:00:00Z",
     "late.due.assignment9: expected the name of an assignment (assignment1, assignment2"),
    ("[late.due]\nassignment1 = 2026-11-27T09:00:00", "late.due.assignment1: expected a date and time with its "
     "offset"),
    ("[late.due]\nassignment1 = 2026-11-27", "late.due.assignment1: expected a date and time with its offset"),
])
def test_a_bad_late_table_is_one_line_naming_the_key_and_value(tmp_path, table, message):
    with pytest.raises(ConfigError) as error:
        load(course_with(tmp_path, f"[late]\n{table}\n"))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_changed_late_table_grades_nothing_again_and_any_other_change_does(tmp_path):
    from grader.batch.regrade import course_digests

    def digest(text: str) -> str:
        return course_digests(load(course_with(tmp_path, text)))["course"]

    plain = digest("")
    assert digest("[late]\ncap = 30\n[late.due]\nassignment1 = 2026-11-27T09:00:00Z\n") == plain
    assert digest("[late]\ncap = 50\n") == plain
    assert digest("# a comment\n") != plain
    assert digest("[late]\ncap = 30\n[feedback]\nreveal = \"bug\"\n") != plain  # the table after [late] counts
