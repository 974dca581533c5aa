"""The most telling check: the failure a report shows in full is the one that says most about the bug
(grader.judging.telling), chosen with the bug table that grade expected stores (bugs.json)."""

from grader import load_course
from grader.gradebook import cells
from grader.judging import diagnosis
from grader.judging.telling import most_telling, pairs
from grader.results import CheckResult, ComponentResult, Details, Outcome
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


def _failed(check_id: str, hint: str, example: str = "x", reason: str = "mismatch") -> CheckResult:
    return CheckResult(check_id, "public", 1.0, Outcome("failed", reason, "", Details(hint=hint, example=example)))


def test_a_hint_that_names_the_bug_comes_first_then_the_check_fewer_bugs_fail_then_the_smallest_example():
    table = {"one": {"component": "C", "message": "heads split with view(B, h, T, d_k) without the transpose",
                     "failing": {"named": {}, "rare": {}, "common": {}}},
             "two": {"component": "C", "message": "the output projection left out", "failing": {"common": {}}}}
    checks = [_failed("common", "differs", "a"), _failed("rare", "differs", "ab"),
              _failed("named", "not view(B, n_heads, T, d_k) but view(B, T, n_heads, d_k)", "abcdef")]
    comp = ComponentResult("C", "a/c.py", 0.0, 1.0, checks, ())
    assert most_telling(comp, table).id == "named"  # type: ignore[union-attr]
    comp.checks = checks[:2]
    assert most_telling(comp, table).id == "rare"  # failed by one bug of two
    comp.checks = [_failed("rare", "differs", "abc"), _failed("rare2", "differs", "ab")]
    table["one"]["failing"]["rare2"] = {}
    assert most_telling(comp, table).id == "rare2"  # as specific: the smaller example
    comp.checks = [CheckResult("waits", "public", 1.0, Outcome("failed", "mismatch"), waiting_on=("P",))]
    assert most_telling(comp, table) is None  # not charged here: nothing to show in full
