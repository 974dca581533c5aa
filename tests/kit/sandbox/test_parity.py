"""Parity: the student's local grade (the tree `grade release` writes: public tier, no reference)
charges what the instructor's grade of the same tree charges, and starts at the part with the bug.

A composite whose checks fail while one of its parts fails its own public checks cannot be judged
without the reference: its failures that run through the part wait ("waiting", not charged) and
"Start here" names the earliest failing part, in whichever assignment it lies. The instructor's
grades are those tests/kit/sandbox/test_attribution.py makes of the same single-bug trees (the report cache
shares them within a run)."""

import json
import shutil
from pathlib import Path

import pytest

from grader import load_course
from grader.authoring.release import _public_tier, course_text
from grader.gradebook import cells
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, full_marks, grade_json, mutant, run_grade, scores

COURSE = load_course(ROOT / "course.toml")
FILE = {c.name: f"{a.name}/{c.file}" for a in COURSE.assignments.values() for c in a.components}

# a part's bug (the first entry of its component, as test_attribution pairs them), seen from the
# assignment that builds on it: positional encoding, attention scale, masks, and LayerNorm two
# assignments on (its wait passes through ResidualConnection and EncoderLayer). The feed-forward
# and the residual pass the same way (2 x 30 s more here, left out for CI's time).
SEEN = [("positional_encoding_sin_cos_swapped", "assignment1"), ("no_sqrt_d_k", "assignment2"),
        ("pad_mask_polarity_inverted", "assignment2"), ("layer_norm_unbiased_variance", "assignment3")]


@pytest.fixture(scope="module")
def student_course(tmp_path_factory) -> Path:
    """The course a student grades with, as `grade release` writes it (its public tier and the
    course.toml written for students), without the grader's copy and the stubs it also ships."""
    out = tmp_path_factory.mktemp("student")
    for rel, src in _public_tier(COURSE).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out / rel)
    (out / "course.toml").write_text(course_text(COURSE, performance=True))
    return out / "course.toml"


def lost(report: dict) -> set[str]:
    return {name for name, score in scores(report).items() if score < full_marks(report)[name]}


@pytest.mark.parametrize(("bug", "assignment"), SEEN)
def test_the_students_report_charges_what_the_instructors_does_and_starts_at_the_part(
        student_course, tmp_path, bug, assignment):
    part = BUGS[bug].component
    tree = mutant(tmp_path, BUGS[bug].patches)
    # `grade` as the student runs it (its suites would clash with the kit's own in this process)
    proc = run_grade(assignment, "--submission", str(tree), "--course", str(student_course),
                     "--json", str(tmp_path / "report.json"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    student, instructor = json.loads((tmp_path / "report.json").read_text()), grade_json(tree, assignment)
    assert "hidden" not in {t["tier"] for c in student["components"] for t in c["tests"]}  # the student's tier
    assert lost(student) == lost(instructor), (bug, scores(student), scores(instructor))
    assert student["start_here"] == {"name": part, "file": FILE[part]}
    waiting = [c for c in student["components"] if c["status"] == "waiting"]
    assert waiting, f"{bug}: no component of {assignment} waits on {part}"
    for c in waiting:  # waits on the part itself, through the components that wait on it
        assert c["waiting_on"] == [part] and c["score"] == c["max_score"], c
        assert all(t["waiting_on"] == [part] for t in c["tests"] if t["status"] != "passed"), c["name"]
        said = cells.describe(c, assignment=assignment)  # a notebook's cell says the same
        assert any(line.startswith("  waiting  ") for line in said) and not any("FAILED" in s for s in said)
    text = " ".join(proc.stdout.split())
    assert f"Start here: {part} in {FILE[part]}" in text, text
    assert "points count for now (in the total)" in text and "graded again" in text, text
