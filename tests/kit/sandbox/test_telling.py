"""The most telling check: the failure a report shows in full is the one that says most about the bug
(grader.judging.telling), chosen with the bug table that grade expected stores (bugs.json)."""

from grader import load_course
from grader.gradebook import cells
from grader.judging import diagnosis
from grader.judging.telling import pairs
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, as_json, grade_report, mutant, report_lines

COURSE = load_course(ROOT / "course.toml")
TABLE = diagnosis.load(COURSE)


def shown_in_full(lines: list[str]) -> list[str]:
    """The ids of the checks whose panels the report shows ("failed  <id>" titles)."""
    return [line.split("failed  ")[1].split()[0] for line in lines if "failed  " in line]


def test_heads_split_without_the_transpose_shows_the_check_that_names_the_fix(tmp_path):
    bug = BUGS["heads_split_with_the_wrong_view"]
    graded = grade_report(mutant(tmp_path, bug.patches), "assignment2")  # test_assignment2's tree: cached
    mha = next(c for c in as_json(graded)["components"] if c["name"] == "MultiHeadAttention")
    assert mha["telling"] == "mha_heads_use_contiguous_columns", mha["telling"]
    assert shown_in_full(report_lines(graded)) == ["mha_heads_use_contiguous_columns"]
    # the nbgrader feedback's cell shows the same one in full
    assert "  mha_heads_use_contiguous_columns, in full:" in cells.describe(mha, assignment="assignment2")


def test_two_bugs_in_layer_norm_show_the_check_whose_hint_names_both(tmp_path):
    patches = {f: BUGS["layer_norm_unbiased_variance"].patches[f] + BUGS["layer_norm_eps_outside_sqrt"].patches[f]
               for f in BUGS["layer_norm_unbiased_variance"].patches}
    graded = grade_report(mutant(tmp_path, patches), "assignment1")
    ln = next(c for c in graded.components if c.name == "LayerNorm")
    assert ln.telling == "layer_norm_matches_torch", ln.telling
    hint = next(t for t in ln.checks if t.id == ln.telling).outcome.details.hint
    for name in ("layer_norm_unbiased_variance", "layer_norm_eps_outside_sqrt"):
        assert pairs(TABLE[name]["message"]) & pairs(hint), (name, hint)
    assert "layer_norm_matches_torch" in shown_in_full(report_lines(graded))
