"""The diagnosis on bugs it was not built from (tests/kit/heldout.py): the report names at least 80% of
the held-out classic bugs on their own component, and never names a bug on another component.

Grading the 134 trees takes minutes, so the diagnosis (the course's table and the numerical forensics'
"looks like", grader.judging.diagnosis) is run here on what their failing public checks said when graded
(heldout_record.json, written by `python -m tests.kit.heldout`); a few cheap trees are graded afresh
to hold the record to what grading says now (tests/kit/sandbox/test_heldout.py)."""

from grader import load_course
from tests.kit.conftest import ROOT
from tests.kit.heldout import (
    HELDOUT,
    diagnosed,
    record_fixture,  # noqa: F401 (the fixture `record`)
)

SHARE = 0.80  # of the held-out set named on its own component: 108 of 134 today (issue 52 asks 80%; issue 44 asked 70%)


def test_the_record_covers_the_held_out_set(record):
    assert set(record) == set(HELDOUT), "run python -m tests.kit.heldout to grade the entries again"


def test_most_held_out_bugs_are_named_on_their_own_component_and_none_elsewhere(record):
    course = load_course(ROOT / "course.toml")
    own, elsewhere = [], {}
    for name, graded in record.items():
        named = diagnosed(course, name, graded)
        if HELDOUT[name].component in named:
            own.append(name)
        if set(named) - {HELDOUT[name].component}:
            elsewhere[name] = named
    assert not elsewhere, f"a bug named on another component: {elsewhere}"
    assert len(own) >= SHARE * len(record), f"named {len(own)} of {len(record)}: {sorted(set(record) - set(own))}"
