"""Findings as data (issue 52): the batch summary counts classic bugs from the diagnosis's data (its "what"),
never by parsing its sentence back: a sentence worded otherwise (reveal, a course's words) changes nothing."""

from grader import load_course
from grader.batch.summary import summarise
from grader.report_json import Graded, graded
from tests.kit.conftest import ROOT

SPEC = load_course(ROOT / "course.toml").assignment("assignment1")


def _row(message: str) -> tuple[str, Graded]:
    diagnosis = {"bug": "layer_norm_eps_outside_sqrt", "what": "LayerNorm with eps added outside the square root",
                 "fix": "", "message": message}
    return "s1", graded({"score": 30.0, "batch": {"status": "graded"}, "isolation": "",
                         "components": [{"name": "LayerNorm", "score": 4.0, "tests": [], "diagnosis": diagnosis}]})


def test_the_summary_names_a_bug_by_its_data_whatever_its_sentence_says():
    for message in ("matches LayerNorm with eps added outside the square root on all 4 failing public checks: x.",
                    "Your LayerNorm adds eps outside the root (4 checks)."):
        found = summarise(SPEC, [_row(message)])["diagnoses"]
        assert found == [{"component": "LayerNorm", "bug": "layer_norm_eps_outside_sqrt",
                          "what": "LayerNorm with eps added outside the square root", "students": 1}], found
