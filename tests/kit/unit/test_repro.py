"""Debugging where students work: `grade --only` runs a few checks alone, in the course's order, and a
component with none of them is left out (`grade --repro`: tests/kit/sandbox/test_repro.py; end to end,
with the notebook: tests/kit/kernel/test_notebook.py)."""

from tests.kit.conftest import ROOT


def test_narrowing_keeps_the_courses_order_and_drops_empty_components():
    from grader import load_course
    from grader.grading.only import narrow

    spec = load_course(ROOT / "course.toml").assignment("assignment2")
    narrowed = narrow(spec, frozenset({"mha_matches_torch", "sdpa_weights_rows_sum_to_one", "sdpa_matches_torch"}))
    assert [(c.name, [chk.id for chk in c.checks]) for c in narrowed.components] == [
        ("scaled_dot_product_attention", ["sdpa_matches_torch", "sdpa_weights_rows_sum_to_one"]),
        ("MultiHeadAttention", ["mha_matches_torch"])]
    assert narrowed.components[1].isolated == ()
