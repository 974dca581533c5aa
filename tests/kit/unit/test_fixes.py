"""'Should be' is a complete fix (issue 52): for every one-line bug of the course's table, the expression the
report shows at reveal "fix" (grader.authoring.fixes, stored in bugs.json by `grade expected`), put in
place of what the bug made of it in the bug's tree, gives the solution's file back, so the checks pass
as they pass on the solutions. Text only: nothing is graded."""

from grader import load_course, words
from grader.authoring.expected import expression_of
from grader.findings import Diagnosis, Found
from grader.judging import diagnosis, telling
from grader.reveal import Reveal
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, SOLUTIONS

COURSE = load_course(ROOT / "course.toml")
TABLE = diagnosis.load(COURSE)


def test_each_one_line_fix_put_in_place_gives_the_solution_back():
    fixed = 0
    for name, bug in BUGS.items():
        expression = expression_of(COURSE, bug.patches)
        assert TABLE[name].get("expression", "") == expression, f"{name}: bugs.json is stale (grade expected)"
        if not expression:
            continue
        (file, [(old, new)]), = bug.patches.items()
        solution = (SOLUTIONS / file).read_text()
        mutant = solution.replace(old, new, 1)
        bugged = expression.replace(old, new, 1)
        assert mutant.count(bugged) == 1, (name, bugged)
        assert mutant.replace(bugged, expression, 1) == solution, name
        fixed += 1
    assert fixed >= 90, fixed  # of the table's one-line bugs (93 when written)


def test_should_be_is_the_whole_expression():
    found = telling.completed(Diagnosis(Found.TABLE, "layer_norm_unbiased_variance"), TABLE)
    said = words.diagnosis(found, Reveal.FIX)
    assert said.endswith("Should be: x.var(dim=-1, keepdim=True, unbiased=False)."), said
    assert "x.var" not in words.diagnosis(found, Reveal.BUG)
    assert "expression" not in (words.shown(found, Reveal.BUG) or {})
