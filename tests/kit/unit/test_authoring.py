"""Changing the course: a check of weight 0 is informational (reported, never counted), and a course where
no check of a component counts, or a check weighs less than 0, is refused."""

import re
from pathlib import Path

import pytest

from grader.course import load
from grader.course_table import ConfigError
from grader.results import Outcome
from tests.kit.conftest import ROOT

LN_WEIGHTS = "weights = { layer_norm_matches_torch = 2, layer_norm_matches_reference = 2 }"


def course_with(tmp_path: Path, weights: str) -> Path:
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    assert text.count(LN_WEIGHTS) == 1
    path = tmp_path / "course.toml"
    path.write_text(text.replace(LN_WEIGHTS, weights))
    return path


@pytest.mark.parametrize("failing", ["layer_norm_rows_are_normalised", "layer_norm_has_gamma_and_beta"])
def test_a_check_of_weight_0_is_reported_and_never_counted(tmp_path, failing):
    from grader.judging.scoring import Judged, score

    course = load(course_with(tmp_path, LN_WEIGHTS.replace(" }", f", {failing} = 0 }}")))
    spec = course.assignment("assignment1")
    results = {c.id: Outcome("passed") for comp in spec.components for c in comp.checks}
    results[failing] = Outcome("failed", "mismatch", "differs")
    report = score(course, spec, tmp_path, Judged(results))
    norm = report.components[0]
    assert norm.name == "LayerNorm" and norm.score == norm.max_score
    assert [c.id for c in norm.checks if not c.earned] == [failing]  # still in the report
    results[failing] = Outcome("passed")
    results["layer_norm_matches_torch"] = Outcome("failed", "mismatch", "differs")
    assert score(course, spec, tmp_path, Judged(results)).components[0].score < norm.max_score


def test_a_component_whose_checks_all_weigh_0_is_refused(tmp_path):
    ids = [c.id for c in load(ROOT / "course.toml").assignment("assignment1").components[0].checks]
    with pytest.raises(ConfigError, match="every check has weight 0"):
        load(course_with(tmp_path, "weights = { " + ", ".join(f"{i} = 0" for i in ids) + " }"))


def test_a_negative_weight_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="layer_norm_matches_torch"):
        load(course_with(tmp_path, "weights = { layer_norm_matches_torch = -1 }"))
