"""One typed result across every edge (issue 56): a report the kit writes comes back from its JSON as
itself. `grader.results.to_json` writes a Report, `grader.report_json.from_json` reads one; whatever
reads a report's JSON (a batch's outputs, the gradebook, Gradescope's results, a regrade) reads that
Report. Over every entry of the golden record (real gradings: the solutions, each component's classic
bug, a part-and-composite pair) and over reports the judging stages score from drawn outcomes."""

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.findings import Note, Noted
from grader.report_json import from_json
from grader.results import Report, to_json
from tests.kit import golden
from tests.kit import strategies as s

RECORD = golden.load()


def course_facts(assignment: str) -> dict:
    """What the JSON leaves to the course: the title, each check's weight, each component's parts."""
    spec = s.COURSE.assignment(assignment)
    return {"title": spec.title, "weights": {c.id: c.weight for comp in spec.components for c in comp.checks},
            "depends": {comp.name: comp.depends for comp in spec.components}}


@pytest.mark.parametrize("name", sorted(RECORD))
def test_a_recorded_reports_json_is_what_its_report_writes_again(name):
    entry = RECORD[name]
    report = from_json(entry["json"], **course_facts(entry["assignment"]))
    assert golden.normalise_json(to_json(report)) == entry["json"]
    assert from_json(to_json(report), **course_facts(entry["assignment"])) == report


notes = st.lists(st.one_of(
    st.builds(Note, st.sampled_from([Noted.PUBLIC_ONLY])),
    st.builds(Note, st.sampled_from([Noted.RESTARTED, Noted.NOT_STAGED, Noted.LATE, Noted.WORDED]), s.words),
    st.builds(Note, st.just(Noted.ONLY), names=st.lists(s.words, max_size=3).map(tuple)),
    st.builds(Note, st.just(Noted.GPU_RAN), s.words,
              counts=st.tuples(st.integers(0, 9), st.integers(0, 9), st.floats(0, 99)).map(
                  lambda c: tuple(map(float, c))))), max_size=4)


@s.KIT
@given(s.graded(st.one_of(s.ran, s.not_counted)), notes)
def test_a_scored_report_comes_back_from_its_json_as_itself(graded, drawn_notes):
    assignment, outcomes = graded
    report = dataclasses.replace(s.scored(assignment, outcomes), notes=drawn_notes)
    again = from_json(to_json(report), **course_facts(assignment.name))
    assert again == dataclasses.replace(report, duration=round(report.duration, 2))
    assert to_json(again) == to_json(report)


def test_the_round_trip_compares_what_matters():
    """The equality the tests above rely on sees a changed note (a Report's fields, all compared)."""
    report = Report("a", "A", Path("s"), [], 1.0, [Note(Noted.PUBLIC_ONLY)])
    assert from_json(to_json(report), title="A") == report
    assert from_json(to_json(report), title="A") != dataclasses.replace(report, notes=[Note(Noted.WORDED, "x")])
