"""Behaviour unchanged (issue 46): the same grades, reports and JSON as the record.

tests/kit/golden_record.json holds, for golden.SUBSET, the JSON report and the terminal report at
100 columns that the grader gave when it was recorded, less what a run decides (durations, paths,
measured timings). A change to what a grade says fails here until it is recorded again on purpose
(`python -m tests.kit.golden --out tests/kit/golden_record.json NAME...`), which shows in review.

golden.SUBSET is fixed and named (the whole list takes 49 minutes on two busy cores): the solutions
of assignments 1-4 and, for each of the 22 components, one bug of the course's table (the first of
its component, or for assignment4 the cheapest to grade: its training checks cost up to a minute a
tree), plus one part-and-composite pair.

The reports come through tests/kit/conftest.grade_report's cache: in the full suite, the trees that
test_assignmentN, test_attribution and the solutions' fixture grade are not graded again (the cache
is keyed on the tree and on the grader's and the suites' sources, so a change to either grades
afresh), and each entry here costs a few hundredths of a second (0.02 s measured after
test_assignment1 graded the same tree). Alone (`-n 0`) this file grades its 27 trees itself:
about 5 minutes on two busy cores, most of it assignments 3 and 4.
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
