"""The points rule said as scoring computes it (issue 52): points in proportion to the weight of the checks
passed (grader.judging.scoring), in the student README and, where the weights make the points differ
from the count of checks passed, in a line under the report's table."""

import io
from pathlib import Path

from rich.console import Console

from grader import course as config
from grader.authoring import readme
from grader.judging import scoring
from grader.render import report
from grader.results import Outcome
from tests.kit.conftest import ROOT

COURSE = config.load(ROOT / "course.toml")
A4 = COURSE.assignment("assignment4")


def _said(failing: tuple[str, ...]) -> tuple[object, str]:
    results = {chk.id: Outcome("failed" if chk.id in failing else "passed", "mismatch" if chk.id in failing else "")
               for c in A4.components for chk in c.checks}
    graded = scoring.score(COURSE, A4, Path("/sub"), scoring.Judged(results), 1.0)
    out = io.StringIO()
    report.render(graded, Console(file=out, width=100, no_color=True, force_terminal=False))
    return graded, " ".join(out.getvalue().split())


def test_the_readme_says_the_rule_scoring_applies():
    text = readme.readme_text(COURSE)
    assert "in proportion to the weight of the checks passed, not their number" in text
    assert "in proportion to those that passed" not in text


def test_points_that_differ_from_the_count_of_checks_say_the_weights():
    spec = next(c for c in A4.components if c.name == "train_epoch")
    heavy = next(chk for chk in spec.checks if chk.weight > 1 and chk.tier == "public")
    graded, said = _said((heavy.id,))
    train = next(c for c in graded.components if c.name == "train_epoch")
    total = sum(chk.weight for chk in spec.checks)
    # scoring's rule, and the line that says it
    assert train.score == round(spec.points * (total - heavy.weight) / total, 2), train.score
    n = len(spec.checks)
    assert (f"Points follow check weights: train_epoch's {n - 1} of {n} checks passed weigh "
            f"{total - heavy.weight:g} of {total:g}.") in said, said


def test_points_that_follow_the_count_say_nothing_of_weights():
    spec = next(c for c in A4.components if c.name == "Vocab")
    assert len({chk.weight for chk in spec.checks}) == 1
    _, said = _said((spec.checks[0].id,))
    assert "weights" not in said, said
