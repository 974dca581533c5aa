"""A diagnosis is typed (issue 56, one typed result): grader.findings.Diagnosis, whose data a report's JSON
carries beside its words (grader.words.worded) and grader.report_json reads back as itself, its words
left. A view that shows the diagnosis's sentence (a notebook's cell) words it again from that data, with the
report's reveal and whose copy it is: the same sentence the JSON holds, at every level."""

import contextlib
import dataclasses
import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader import words
from grader.findings import Diagnosis, Found, Note, Noted
from grader.gradebook import cells
from grader.judging import diagnosis, telling
from grader.report_json import from_json
from grader.results import ComponentResult, Details, Outcome, Report, to_json
from grader.reveal import Reveal
from tests.kit import golden
from tests.kit import strategies as s

RECORD = golden.load()
# the record's entries with a diagnosis: each component's classic bug and the pair's part
DIAGNOSED = sorted(name for name, e in RECORD.items() if any(c["diagnosis"] for c in e["json"]["components"]))

text = st.text(st.sampled_from("abcdefgh xyz_(),.:"), max_size=20)
nonempty = text.filter(str.strip)
checks = st.lists(st.sampled_from(["c_one", "c_two", "c_three"]), max_size=3, unique=True).map(tuple)
modules = st.lists(st.sampled_from(["linear1", "linear2", "cross_attn.w_k"]), min_size=1, max_size=3,
                   unique=True).map(tuple)


def _ids(draw, prefix: str) -> tuple[str, str]:
    check = draw(st.sampled_from(["c_one", "c_two"]))
    return f"{prefix}:{check}", check


@st.composite
def diagnoses(draw) -> Diagnosis:
    """A Diagnosis of any kind, with the fields its kind has (grader.judging.diagnosis's and telling's), set or not."""
    kind = draw(st.sampled_from(list(Found)))
    if kind == Found.TABLE:
        return Diagnosis(kind, draw(st.sampled_from(["bug_x", "layer_norm_unbiased_variance"])), what=draw(text),
                         fix=draw(text), explains=draw(checks), expression=draw(text))
    if kind == Found.LOOKS_LIKE:
        bug, check = _ids(draw, "looks_like")
        return Diagnosis(kind, bug, check=check, subject=draw(text), looks_like=draw(nonempty),
                         explains=draw(st.sampled_from([(), (check,)])))
    if kind == Found.NAMES:
        bug, check = _ids(draw, "looks_like")
        names = draw(st.sampled_from(["layers", "unbiased", "no_gradient"]))
        return Diagnosis(kind, bug, check=check, component=draw(nonempty), names=names,
                         modules=() if names == "layers" else draw(modules),
                         explains=draw(st.sampled_from([(), (check,)])))
    bug, check = _ids(draw, "placement")
    return Diagnosis(kind, bug, check=check, component=draw(nonempty), where=draw(nonempty),
                     function=draw(nonempty), line=draw(text))


@s.KIT
@given(diagnoses())
def test_any_diagnosis_comes_back_from_its_json_as_itself(found):
    assert Diagnosis.from_json(found.to_json()) == found
    # as a report's JSON holds it, its words beside: they are left, the data read
    assert Diagnosis.from_json(words.worded(found)) == found
    assert Diagnosis.from_json(words.shown(found, Reveal.FIX)) == found
    # a student's copy at "bug" leaves out the code to write: read back, the diagnosis lacks it, and no more
    assert Diagnosis.from_json(words.shown(found, Reveal.BUG)) == dataclasses.replace(found, fix="", line="",
                                                                                     expression="")


@s.KIT
@given(diagnoses(), st.sampled_from(list(Reveal)), st.booleans())
def test_a_view_words_the_sentence_the_json_holds_at_every_level(found, reveal, student):
    """A notebook's cell says the JSON's "message", worded again from the data of the JSON it reads. But a
    placement at "bug" in a student's copy: its message says the line's code, which the copy leaves out."""
    data = _json(Report("a", "A", Path("s"), [_component(found)], 1.0, reveal=reveal, student=student))
    stored = data["components"][0]["diagnosis"]
    if student and reveal is Reveal.BUG and found.kind == Found.PLACEMENT:
        assert "line" not in stored
        return
    assert _cell(data) == _said(stored)


def test_what_a_document_holds_that_is_no_diagnosis_reads_as_none_and_one_without_kind_as_the_tables():
    assert [Diagnosis.from_json(d) for d in (None, {}, [], "matches x")] == [None] * 4
    old = {"bug": "layer_norm_unbiased_variance", "what": "w", "fix": "f", "explains": ["b", "a"],
           "message": "matches w on all 2 failing public checks: f."}
    assert Diagnosis.from_json(old) == Diagnosis(Found.TABLE, "layer_norm_unbiased_variance", what="w", fix="f",
                                                 explains=("b", "a"))
    # a forensic kind's "what" and "fix" are words: not read as the table's
    seen = {"kind": "looks_like", "bug": "looks_like:c", "check": "c", "subject": "rows", "looks_like": "twice",
            "what": "rows looks like twice", "fix": "", "message": "rows looks like twice (in c)."}
    assert Diagnosis.from_json(seen) == Diagnosis(Found.LOOKS_LIKE, "looks_like:c", check="c", subject="rows",
                                                  looks_like="twice")


# the keys each kind's JSON had when a diagnosis was a dict: grader.judging.diagnosis's, telling's, the words
WORDS = {"what", "fix", "message"}


def _found(component: str, check: str, outcome: Outcome) -> Diagnosis | None:
    comp = next(c for c in s.COMPONENTS if c.name == component)
    assignment = s.assignment_of(comp)
    return diagnosis.forensic(assignment, component, {**s.all_passed(assignment), check: outcome})


@pytest.mark.parametrize(("component", "check", "details", "keys"), [
    ("LayerNorm", "layer_norm_matches_torch", {"looks_like": "twice", "subject": ""},
     {"kind", "bug", "check", "subject", "looks_like", "explains"}),
    ("Encoder", "encoder_has_named_parts",
     {"parameters": {"missing": ["layers.1.norm.weight"], "unexpected": [], "wrong_shape": []}},
     {"kind", "bug", "check", "component", "names", "explains"}),
    ("PositionwiseFeedForward", "feed_forward_has_named_layers",
     {"parameters": {"missing": ["linear1.bias"], "unexpected": [], "wrong_shape": []}},
     {"kind", "bug", "check", "component", "names", "modules", "explains"}),
    ("DecoderLayer", "decoder_layer_gradients_reach_every_parameter",
     {"parameters": {"no_gradient": ["cross_attn.w_k.weight"]}},
     {"kind", "bug", "check", "component", "names", "modules", "explains"})])
def test_a_forensic_diagnosis_writes_the_keys_it_wrote_as_a_dict(component, check, details, keys):
    found = _found(component, check, Outcome("failed", "mismatch", "", Details.from_json(details)))
    assert found is not None
    assert set(words.worded(found) or {}) == keys - {"explains"} | WORDS  # an empty subject is written too
    assert set(words.worded(telling.completed(found, {})) or {}) == keys | WORDS


def test_a_placement_writes_the_keys_it_wrote_as_a_dict_and_its_line_only_at_fix():
    placed = Diagnosis(Found.PLACEMENT, "placement:c", check="c", component="C", where="a/c.py:3",
                       function="C.forward", line="torch.zeros(3)")
    keys = {"kind", "bug", "check", "component", "where", "function", "line"}
    assert set(words.worded(telling.completed(placed, {})) or {}) == keys | WORDS
    assert set(words.shown(placed, Reveal.BUG) or {}) == keys - {"line"} | WORDS - {"fix"}


def test_a_report_read_back_is_a_students_copy_where_its_notes_say_so():
    report = Report("a", "A", Path("s"), [], 1.0, [Note(Noted.PUBLIC_ONLY)], reveal=Reveal.BUG, student=True)
    assert from_json(to_json(report)).student
    assert not from_json(to_json(dataclasses.replace(report, notes=[], student=False))).student


def _component(found: Diagnosis) -> ComponentResult:
    return ComponentResult("C", "a/c.py", 0.0, 1.0, [], (), diagnosis=found)


def _json(report: Report) -> dict:
    """The JSON of `report` as grading writes it: a student's copy carries its PUBLIC_ONLY note."""
    notes = [*report.notes, Note(Noted.PUBLIC_ONLY)] if report.student else report.notes
    return to_json(dataclasses.replace(report, notes=notes))


def _cell(data: dict, name: str = "C") -> list[str]:
    """The Diagnosis lines a notebook's grade cell prints for component `name` of `data`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cells.component(data, name, points=100)
    return [line for line in out.getvalue().splitlines() if line.startswith("  Diagnosis: ")]


def _said(stored: dict | None) -> list[str]:
    """The Diagnosis line the cell printed when it showed the JSON's "message" as stored."""
    message = (stored or {}).get("message")
    return [f"  Diagnosis: {' '.join(message.split())}"] if message else []


@pytest.mark.parametrize("name", DIAGNOSED)
def test_a_cell_shows_the_records_diagnoses_as_the_json_says_them_at_every_level(name):
    report = from_json(RECORD[name]["json"])
    for reveal in Reveal:
        for student in (False, True):
            data = _json(dataclasses.replace(report, reveal=reveal, student=student))
            for c in data["components"]:
                assert _cell(data, c["name"]) == _said(c["diagnosis"]), (reveal, student, c["name"])
