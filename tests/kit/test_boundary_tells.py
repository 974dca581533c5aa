"""The trust boundary, tells: nothing in the instructor's grade that a student's own run could have
recorded and answered from a table (issue 43, item 5)."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kit.conftest import ROOT

PUBLIC = ROOT / "tests" / "grading" / "public" / "test_assignment1.py"


class _Item:
    def __init__(self, name: str, path: Path, obj):
        self.name, self.path, self.obj = name, path, obj


class _Submission:  # what the plugin reads and writes of the submission at collection
    below: dict = {}
    fresh_seed = None
    order: list = []

    def __init__(self, reference):
        self.reference = reference


def _draws(reference) -> list[int]:
    """What a public property (by its place and name: LayerNorm's) draws when the grading plugin has
    collected it for a grade with `reference` (the instructor's) or without (the student's)."""
    from grader import load_course
    from grader.suite.plugin import GradingPlugin

    seen: list[int] = []

    @settings(derandomize=True, max_examples=8, database=None)  # as the grading profile draws
    @given(st.integers(-10**9, 10**9))
    def test_layer_norm_rows_are_normalised(n):
        seen.append(n)

    plugin = GradingPlugin(load_course(ROOT / "course.toml"), _Submission(reference),
                           {"layer_norm_rows_are_normalised": ()})
    items = [_Item("test_layer_norm_rows_are_normalised", PUBLIC, test_layer_norm_rows_are_normalised)]
    plugin.pytest_collection_modifyitems(None, None, items)
    assert items
    items[0].obj()
    return seen


def test_the_instructors_grade_draws_the_public_properties_afresh_and_always_the_same():
    """The student's run draws a public property's inputs from the digest of its source (derandomized):
    the instructor's grade drew the same, and a lookup table of them scored 5.83/10 against 1.67. Now
    the instructor's grade draws them from course.toml's hidden_seed (not shipped), the same every
    grade; the student's run draws as before."""
    student, again = _draws(None), _draws(None)
    instructor, once_more = _draws(ROOT / "solutions"), _draws(ROOT / "solutions")
    assert student == again and instructor == once_more  # derandomized: reproducible either way
    assert set(instructor[1:]).isdisjoint(student[1:]), (student, instructor)  # (the first: the simplest)
