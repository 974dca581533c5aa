"""Behaviour unchanged (issue 46): the record (tests/kit/golden_record.json) holds golden.SUBSET, which
covers the solutions of every assignment and every component (the grades, reports and JSON held to the
record: tests/kit/sandbox/test_golden.py).

golden.SUBSET is fixed and named (the whole list takes 49 minutes on two busy cores): the solutions
of assignments 1-4 and, for each of the 22 components, one bug of the course's table (the first of
its component, or for assignment4 the cheapest to grade: its training checks cost up to a minute a
tree), plus one part-and-composite pair.
"""

from grader import load_course
from tests.kit import golden
from tests.kit.conftest import ROOT
from tests.kit.golden import record_fixture  # noqa: F401 (the fixture `record`)


def test_the_subset_covers_every_component_and_the_solutions(record):
    table = golden.entries()
    course = load_course(ROOT / "course.toml")
    assert set(golden.SUBSET) <= set(record) <= set(table), "run python -m tests.kit.golden (see its docstring)"
    assert {f"solutions/{a}" for a in course.assignments} <= set(golden.SUBSET)
    from tests.grading.bugs import BUGS

    covered = {BUGS[name.partition("/")[2]].component for name in golden.SUBSET if name.startswith("bugs/")}
    assert covered == {c.name for a in course.assignments.values() for c in a.components}
