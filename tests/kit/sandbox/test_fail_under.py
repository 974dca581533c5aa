"""`--fail-under POINTS`: autograding by exit status (docs/how-to/autograde.md), through the real command
line: 1 below the bar with one line on stderr, 0 at or above it, 2 for a bar that is no number of
points or more than the assignment has."""

import json
import shutil
from pathlib import Path

import pytest

from tests.kit.conftest import mutant, run_grade
from tests.kit.sandbox.test_batch import CLASS, read_csv
from tests.kit.sandbox.test_cli import one_line_error

# LayerNorm's public checks: the score counts them alone (--only), which keeps each grade short
LAYER_NORM = "layer_norm_matches_torch,layer_norm_rows_are_normalised,layer_norm_has_gamma_and_beta"
EPS_OUTSIDE = {"assignment1/layer_norm.py": [("torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)")]}


def graded(tree: Path, *extra: str):
    """`grade assignment1 --only LAYER_NORM --json - EXTRA` on `tree`: (the process, its JSON report)."""
    proc = run_grade("assignment1", "--submission", str(tree), "--only", LAYER_NORM, "--json", "-", *extra)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, json.loads(proc.stdout)


def test_fail_under_exits_1_below_the_bar_and_0_at_it(tmp_path):
    tree = mutant(tmp_path, EPS_OUTSIDE)
    below, report = graded(tree, "--fail-under", "10")
    score = report["score"]
    assert 0 < score < report["max_score"], report["score"]  # a partial score: the bar is between its ends
    assert below.returncode == 1, below.stderr[-3000:]
    # the report (on stderr, with --json -) and its JSON are all there; the verdict is the last line
    *shown, verdict = below.stderr.strip().splitlines()
    assert verdict == f"grade: {score:g} / {report['max_score']:g} points is below --fail-under 10"
    assert any(line.startswith("score ") for line in shown) and "--fail-under" not in "".join(shown)
    at, again = graded(tree, "--fail-under", f"{score:g}")
    assert again["score"] == score and at.returncode == 0 and "--fail-under" not in at.stderr, at.stderr[-3000:]


@pytest.mark.parametrize("bar, named", [("-1", "'-1'"), ("ten", "'ten'"), ("nan", "'nan'"), ("inf", "'inf'"),
                                        ("40.5", "assignment1's 40 points")])
def test_a_bar_that_is_no_number_of_points_or_too_high_is_a_usage_error(bar, named):
    one_line_error(run_grade("assignment1", "--fail-under", bar), "--fail-under", named)


@pytest.mark.parametrize("other", [["--watch"], ["--repro", "layer_norm_matches_torch"]])
def test_fail_under_with_a_command_that_sets_no_grade_s_status_is_refused(other):
    one_line_error(run_grade("assignment1", "--fail-under", "1", *other), "--fail-under")


@CLASS
def test_batch_fail_under_names_the_students_below_the_bar(graded, class_dir, quick_course, tmp_path):
    """The class graded once (conftest.graded), run again with a bar in a copy of its OUT: nothing is
    graded again, and the exit status says whether every total clears the bar."""
    out = tmp_path / "out"
    shutil.copytree(graded[0], out)
    totals = {s: float(r["total"]) for s, r in read_csv(out / "grades.csv").items()}
    low = sorted(s for s, total in totals.items() if total < 40)
    assert low and len(low) < len(totals), totals

    def again(bar: str):
        return run_grade("batch", str(class_dir), "--assignment", "assignment1", "--out", str(out), "--course",
                         str(quick_course), "--fail-under", bar)

    proc = again("40")
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"grade batch: {len(low)} of {len(totals)} submissions scored "
                                                   "below --fail-under 40: "), proc.stderr
    shown = lines[0].split(": ", 2)[2]
    assert all(f"{s} ({totals[s]:g})" in shown for s in low[:5] if s.isprintable()), shown
    assert "0 graded" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    assert again(f"{min(totals.values()):g}").returncode == 0
