"""course.toml [feedback] reveal (issue 44): how much a report tells of a diagnosed bug. "fix" (the
default) names the bug and the code it should be, "bug" the bug alone, "check" only the failed checks
and their hints. Batch feedback follows the level (the student's release keeps it:
tests/kit/unit/test_feedback_levels.py)."""

import dataclasses
import json
import shutil

import pytest

from grader import course as config
from grader.batch import html, outputs
from grader.batch.feedback import feedback
from grader.course_table import ConfigError
from grader.results import to_json
from grader.reveal import Reveal
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, grade_report, mutant, report_lines, run_grade
from tests.kit.feedback_course import _course

SWAP = BUGS["layer_norm_gamma_and_beta_swapped"]
FIX = "self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta"  # the whole expression (bugs.json)
WHAT = "LayerNorm with gamma and beta swapped"


@pytest.fixture(scope="module")
def swapped(tmp_path_factory):
    """LayerNorm with gamma and beta swapped, graded as the course stands (reveal "fix")."""
    return grade_report(mutant(tmp_path_factory.mktemp("swap"), SWAP.patches), "assignment1")


def test_the_level_is_read_checked_and_defaults_to_the_fix(tmp_path):
    assert config.load(ROOT / "course.toml").reveal is Reveal.FIX  # no [feedback]: as before
    for level in Reveal:
        assert config.load(_course(tmp_path, level.value)).reveal is level
    with pytest.raises(ConfigError, match=r'feedback\.reveal: expected "fix" or "bug" or "check", got'):
        config.load(_course(tmp_path, "hints"))
    with pytest.raises(ConfigError, match=r"feedback\.show: unknown key"):
        config.load(_course(tmp_path, "bug", extra="show = 1\n"))
    # as the kit's other bad input: one line naming the value, status 2, no traceback
    proc = run_grade("assignment1", "--course", str(_course(tmp_path, "everything")))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "'everything'" in proc.stderr and "feedback.reveal" in proc.stderr


def test_each_level_says_what_it_allows(swapped):
    said = {}
    for level in Reveal:
        lines = report_lines(dataclasses.replace(swapped, reveal=level))
        said[level] = " ".join(" ".join(lines).replace("│", " ").split())
        assert len(lines) <= 45, "\n".join(lines)
    assert f"Diagnosis: matches {WHAT}" in said[Reveal.FIX] and f"Should be: {FIX}." in said[Reveal.FIX]
    assert f"Diagnosis: matches {WHAT}" in said[Reveal.BUG] and FIX not in said[Reveal.BUG]
    assert "Should be" not in said[Reveal.BUG]
    assert "Diagnosis" not in said[Reveal.CHECK] and "swapped (beta scales" not in said[Reveal.CHECK]
    assert "Likely causes" in said[Reveal.CHECK]  # the hints are what is left to go on


def test_a_students_json_follows_the_level_and_the_instructors_keeps_all(swapped):
    for level, has_fix, has_bug in ((Reveal.FIX, True, True), (Reveal.BUG, False, True), (Reveal.CHECK, False, False)):
        student = to_json(dataclasses.replace(swapped, reveal=level, student=True))
        ln = next(c for c in student["components"] if c["name"] == "LayerNorm")
        assert student["reveal"] == level.value
        assert (FIX in json.dumps(ln["diagnosis"])) is has_fix and (ln["diagnosis"] is not None) is has_bug, ln
        instructor = to_json(dataclasses.replace(swapped, reveal=level))
        assert FIX in json.dumps(instructor["components"][0]["diagnosis"])


def test_batch_feedback_follows_the_level(swapped):
    for level in Reveal:
        shown = dataclasses.replace(swapped, reveal=level)
        text, page = feedback(shown, "alice", hidden=False)
        data = to_json(shown)
        scope = json.dumps(outputs.gradescope(data))
        student = html.student_page("alice", data, page)
        for out in (text, scope, student):
            flat = " ".join(out.replace("│", " ").split())
            assert (WHAT in flat) is (level is not Reveal.CHECK), (level, flat[:3000])
            assert (FIX in flat) is (level is Reveal.FIX), (level, flat[:3000])


def test_a_real_batch_with_the_bug_level_names_the_bug_without_the_fix(tmp_path):
    klass = tmp_path / "class"
    shutil.copytree(mutant(tmp_path, SWAP.patches), klass / "alice")
    out = tmp_path / "out"
    proc = run_grade("batch", str(klass), "--assignment", "assignment1", "--course", str(_course(tmp_path, "bug")),
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = " ".join((out / "feedback" / "alice.txt").read_text().replace("│", " ").split())
    assert f"Diagnosis: matches {WHAT}" in text and "Should be" not in text and FIX not in text, text
    scope = json.loads((out / "gradescope" / "alice" / "results.json").read_text())
    assert any(WHAT in t["output"] for t in scope["tests"]) and FIX not in json.dumps(scope)
