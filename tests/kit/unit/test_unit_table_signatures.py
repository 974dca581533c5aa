"""The course's bug table names each of its own bugs from the signature it stored: every entry of
tests/grading/public/expected/bugs.json, diagnosed (grader.judging.diagnosis) from its recorded failing public
checks alone (every other public check passing, as tests/kit/unit/test_heldout.py's `diagnosed` builds a
record's results), is named as itself on its component, or on none where tests/grading/bugs.py marks
it `undiagnosed`, and nothing is named on another component. Cheap: no grading. A change to how a
failure is matched against the table (a looser comparison of its signatures) that makes two of the
table's own entries alike fails here."""

import json

import pytest

from grader import load_course
from grader.judging import diagnosis
from grader.results import Details, Outcome
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT

COURSE = load_course(ROOT / "course.toml")
TABLE = diagnosis.load(COURSE)


def test_the_table_is_the_course_s_bugs():
    assert set(TABLE) == set(BUGS), "run grade expected to store the table again"


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_bug_of_the_table_is_named_as_itself_from_its_stored_signature(name):
    entry, bug = TABLE[name], BUGS[name]
    spec = COURSE.assignment(bug.assignment)
    results = {chk.id: Outcome("passed") for comp in spec.components for chk in comp.checks if chk.tier == "public"}
    # a stored signature is what the check said: its status, reason and message, the rest its details
    results.update({i: Outcome(s["status"], s.get("reason", ""), s.get("message", ""), Details.from_json(s))
                    for i, s in entry["failing"].items()})
    named = {c: said.bug for c, said in diagnosis.diagnose(COURSE, spec, results, upstream=frozenset()).items()}
    wanted = {} if bug.undiagnosed else {entry["component"]: name}
    assert named == wanted, json.dumps(entry["failing"], indent=1)[:2000]
