"""One typed result across every edge (issue 56): a report the kit writes comes back from its JSON as
itself. `grader.results.to_json` writes a Report, `grader.report_json.from_json` reads one; whatever
reads a report's JSON (a batch's outputs, the gradebook, Gradescope's results, a regrade) reads that
Report. Over every entry of the golden record (real gradings: the solutions, each component's classic
bug, a part-and-composite pair) and over reports the judging stages score from drawn outcomes."""

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader import words
from grader.findings import Diagnosis, Frame, Note, Noted, Parameters
from grader.measured import Gpu, Performance, PerformanceEntry, Timing
from grader.report_json import from_json
from grader.results import Details, Reason, Report, Status, Tier, to_json
from tests.kit import golden
from tests.kit import strategies as s

RECORD = golden.load()


def course_facts(assignment: str) -> dict:
    """What the JSON leaves to the course: the title, each check's weight, each component's parts."""
    spec = s.COURSE.assignment(assignment)
    return {"title": spec.title, "weights": {c.id: c.weight for comp in spec.components for c in comp.checks},
            "depends": {comp.name: comp.depends for comp in spec.components}}


def untyped(report: Report) -> list[tuple]:
    """Its checks whose tier, status or reason is not a member of the kit's enum (a string equals its member,
    so the round trips' equality does not see one)."""
    return [(t.id, t.tier, t.outcome.status, t.outcome.reason) for c in report.components for t in c.checks
            if not (isinstance(t.tier, Tier) and isinstance(t.outcome.status, Status)
                    and isinstance(t.outcome.reason, Reason))]


def test_a_report_read_from_the_records_json_holds_the_kits_vocabulary():
    reports = {name: from_json(e["json"], **course_facts(e["assignment"])) for name, e in RECORD.items()}
    assert {name: untyped(r) for name, r in reports.items() if untyped(r)} == {}
    # not read from an empty record: its gradings (on the CPU) hold both tiers that run there, passed and failed
    checks = [t for r in reports.values() for c in r.components for t in c.checks]
    assert {t.tier for t in checks} == {Tier.PUBLIC, Tier.HIDDEN}
    assert {Status.PASSED, Status.FAILED} <= {t.outcome.status for t in checks}


@given(details=s.details)
def test_a_checks_details_come_back_from_its_json_as_themselves(details):
    assert Details.from_json(json.loads(json.dumps(details.shown()))) == details


@given(data=st.dictionaries(st.sampled_from([f.name for f in dataclasses.fields(Details)] + ["id", "other"]),
                            s.json_values))
def test_details_read_from_any_json_hold_each_field_in_its_form(data):
    """A document written by hand (a Gradescope test's, a regrade's) may hold anything under a detail's key:
    what is read back is text where a field is text, and a data field not of its form is left unset."""
    details = Details.from_json(data)
    texts = [f.name for f in dataclasses.fields(Details) if f.default == ""]
    assert all(isinstance(getattr(details, name), str) for name in texts), details
    assert details.max_abs_error is None or isinstance(details.max_abs_error, float)
    assert isinstance(details.made, tuple) and all(isinstance(f, Frame) for f in details.made)
    assert details.inputs is None or isinstance(details.inputs, dict)
    assert details.parameters is None or isinstance(details.parameters, Parameters)
    if details.pattern is not None:  # worded whatever it holds
        words.pattern(details.pattern)
        words.pattern_shown(details.pattern)


def test_a_report_read_from_the_records_json_holds_typed_details():
    reports = {name: from_json(e["json"], **course_facts(e["assignment"])) for name, e in RECORD.items()}
    checks = [t for r in reports.values() for c in r.components for t in c.checks]
    assert all(isinstance(t.outcome.details, Details) for t in checks)
    # not read from a record without details: its failures say what was expected and what came back
    assert sum(bool(t.outcome.details.expected and t.outcome.details.got) for t in checks) >= 20


def test_a_report_read_from_the_records_json_holds_typed_diagnoses():
    reports = {name: from_json(e["json"], **course_facts(e["assignment"])) for name, e in RECORD.items()}
    found = [c.diagnosis for r in reports.values() for c in r.components if c.diagnosis is not None]
    assert [d for d in found if not isinstance(d, Diagnosis)] == []
    # not read from a record without diagnoses: each component's classic bug in it is named
    written = [c["diagnosis"] for e in RECORD.values() for c in e["json"]["components"] if c["diagnosis"]]
    assert len(found) == len(written) >= 20


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
    # a student's copy, as grading writes one, has the PUBLIC_ONLY note: what from_json reads it by
    report = dataclasses.replace(s.scored(assignment, outcomes), notes=drawn_notes,
                                 student=Note(Noted.PUBLIC_ONLY) in drawn_notes)
    again = from_json(to_json(report), **course_facts(assignment.name))
    assert again == dataclasses.replace(report, duration=round(report.duration, 2))
    assert untyped(again) == []
    assert to_json(again) == to_json(report)


def test_the_round_trip_compares_what_matters():
    """The equality the tests above rely on sees a changed note (a Report's fields, all compared), and whose
    copy it is."""
    report = Report("a", "A", Path("s"), [], 1.0, [Note(Noted.PUBLIC_ONLY)], student=True)
    assert from_json(to_json(report), title="A") == report
    assert from_json(to_json(report), title="A") != dataclasses.replace(report, notes=[Note(Noted.WORDED, "x")])
    assert from_json(to_json(report), title="A", student=False) == dataclasses.replace(report, student=False)
    # the instructor's copy has no such note
    instructors = dataclasses.replace(report, notes=[Note(Noted.RESTARTED, "x")], student=False)
    assert from_json(to_json(instructors), title="A") == instructors


ratios = st.one_of(st.none(), st.floats(0.01, 100.0))
seconds, sizes = st.floats(0.0, 1.0), st.integers(0, 2**30)
entries = st.builds(PerformanceEntry, st.sampled_from(["LayerNorm", "EncoderLayer"]), st.sampled_from(["cpu", "cuda"]),
                    st.sampled_from(list(Timing)), st.text("abc: x", max_size=20), seconds, sizes, seconds, sizes,
                    ratios, ratios, st.booleans(), seconds, sizes, ratios, ratios)


def _as_written(e: PerformanceEntry) -> PerformanceEntry:
    """What the JSON keeps of an entry: an error's message, a measurement's numbers, the reference's where taken."""
    blank = PerformanceEntry(e.component, e.device, e.status, e.message if e.status == Timing.ERROR else "")
    if e.status != Timing.MEASURED:
        return blank
    kept = dataclasses.replace(e, message="")
    return kept if e.against_reference else dataclasses.replace(
        kept, reference_seconds=0.0, reference_memory_bytes=0, time_vs_reference=None, memory_vs_reference=None)


@s.KIT
@given(st.lists(entries, max_size=4), st.booleans(), st.floats(0.0, 10.0),
       st.builds(Gpu, st.booleans(), st.text("NVIDIA H200", max_size=10), st.integers(0, 9), st.floats(0.0, 9.0),
                 st.one_of(st.none(), st.integers(0, 9))))
def test_what_a_grading_measured_comes_back_from_its_json_as_written(drawn, informational, score, gpu):
    """The performance feedback and the GPU tier's summary, read back from the report's JSON: each entry as its
    status writes it (a MEASURED entry's numbers, the reference's where it was timed against it)."""
    perf = Performance(informational, score, 6, 2.0, {"B": 2}, 5, drawn, 0.5)
    report = Report("a", "A", Path("s"), [], 1.0, performance=perf, gpu=gpu)
    again = from_json(to_json(report), title="A")
    assert again.performance == dataclasses.replace(perf, entries=[_as_written(e) for e in drawn])
    assert again.gpu == (gpu if gpu.available else dataclasses.replace(gpu, passed=None))
    assert to_json(again) == to_json(report)
