"""Fair to every correct student, blind to no classic bug: the classes that once slipped through.

- each class of bug that once lost nothing (a setting not passed on to a part, a count over the
  wrong unit, an average weighted by the wrong count) now costs its own component, and nothing
  elsewhere, in every case of the class (tests/kit/mutants.py's SURVIVORS);
- and, where that component is a part of composites in later assignments, nothing there;
- each correct solution that a check once refused (a NumPy float from noam_lr, a pe buffer left
  out of state_dict) keeps every point (ACCEPTED_VARIANTS).

assignment4 is graded here without its two end-to-end training checks (a course with them left
out): they take most of its grading time, and what they grade here (train_epoch's training, with
parts attributed) is covered by tests/kit/sandbox/test_assignment4.py and test_attribution.py.
"""

from tests.kit.mutants import SURVIVORS


def test_every_class_has_several_cases_in_more_than_one_spelling():
    for name, cases in SURVIVORS.items():
        assert len(cases) >= 3, name
        assert len({repr(bug.patches) for bug in cases.values()}) == len(cases), name
