"""Fair to every correct student, blind to no classic bug: each class of bug that once slipped through
(tests/kit/mutants.py's SURVIVORS) has three cases or more, no two patched alike (the classes graded:
tests/kit/sandbox/test_survivors.py).
"""

from tests.kit.mutants import SURVIVORS


def test_every_class_has_several_cases_in_more_than_one_spelling():
    for name, cases in SURVIVORS.items():
        assert len(cases) >= 3, name
        assert len({repr(bug.patches) for bug in cases.values()}) == len(cases), name
