"""`grade batch` into an OUT that holds an earlier run, its parts without a batch: changes.csv says what
moved and why; overrides (a regrade request granted) replace graded points, release what was held for
review, and come off again; hostile student names stay text (grader.batch.regrade, grader.batch.safe).
A batch run again and again: tests/kit/sandbox/test_regrade.py."""

import pytest

from grader.batch import regrade, safe
from grader.batch.outputs import safe_name
from grader.course import load
from grader.course_table import ConfigError
from grader.report_json import graded
from tests.kit.conftest import ROOT
from tests.kit.hostile_names import ESCAPES, FORMULAS, LONG, MARKUP

SPEC = load(ROOT / "course.toml").assignment("assignment1")


@pytest.mark.parametrize("name", FORMULAS + ESCAPES + MARKUP + LONG)
def test_a_hostile_name_is_an_inert_csv_cell(name):
    text = safe.cell(name)
    assert not text.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert text.isprintable()
    assert text.removeprefix("'") == safe.inert(name)


@pytest.mark.parametrize("name", ESCAPES)
def test_control_characters_are_shown_as_their_escapes(name):
    shown = safe.inert(name)
    assert shown.isprintable() and shown != name
    assert shown.encode().decode("unicode_escape") == name  # what was there, written out


@pytest.mark.parametrize("name", LONG + FORMULAS + ESCAPES + ["..", ".hidden", "ivy x", "ivy_x"])
def test_every_name_makes_a_short_distinct_file_name(name):
    made = safe_name(name)
    assert len(made.encode()) <= 100 and "/" not in made and not made.startswith(".")
    assert made == safe_name(name) and made != safe_name(name + "!")


def test_changes_name_the_components_and_why():
    digests = {"submission": "s", "course": "c", "suites": "t", "reference": "r", "grader": "g"}

    def record(points: list[float], **changed: str) -> dict:
        return {"score": sum(points), "batch": {"status": "graded", "digests": {**digests, **changed}},
                "components": [{"name": c.name, "score": p} for c, p in zip(SPEC.components, points, strict=True)]}

    before = {"ada": record([10, 8, 10, 6, 6]), "bob": record([2.5, 8, 10, 6, 6]), "cy": record([10, 8, 10, 6, 6])}
    after = [("ada", record([10, 8, 10, 6, 6], course="c2")), ("bob", record([5, 8, 10, 6, 0], suites="t2")),
             ("cy", record([10, 8, 10, 3, 6], submission="s2", grader="g2")), ("dee", record([0, 0, 0, 0, 0]))]
    rows = regrade.changes(before, [(student, graded(r)) for student, r in after])
    assert [(r["student"], r["before"], r["after"], r["change"], r["components"], r["why"]) for r in rows] == [
        ("bob", 32.5, 29, -3.5, ["LayerNorm", "TransformerEmbedding"], ["suites"]),
        ("cy", 40, 37, -3, ["TokenEmbedding"], ["submission", "grader"])]


def test_overrides_replace_graded_points_and_come_off_again():
    report = {"score": 32.5, "max_score": 40, "components": [{"name": c.name, "score": p, "max_score": c.points}
                                            for c, p in zip(SPEC.components, [2.5, 8, 10, 6, 6], strict=True)]}
    once = regrade.apply_overrides(report, {"LayerNorm": (9.0, "regrade")})
    assert once["score"] == 39 and once["components"][0]["override"] == {"points": 9.0, "reason": "regrade",
                                                                         "graded": 2.5}
    again = regrade.apply_overrides(once, {"LayerNorm": (7.0, "second look"), "TokenEmbedding": (0.0, "copied")})
    assert again["score"] == 31 and again["graded_score"] == 32.5
    assert regrade.apply_overrides(again, {}) == report
    assert "Changed by your instructor" in regrade.feedback_section(again)


def test_an_override_releases_what_a_component_held_for_review_earned(tmp_path):
    """A flagged component under `[policy] flagged = "hold"` scores 0 and keeps its earned points in
    `held`; the overrides file's `release` gives them back, and the batch summary lists it held."""
    from grader.batch import summary

    report = {"score": 30, "max_score": 40, "components": [
        {"name": c.name, "score": p, "max_score": c.points, "forbidden": [], "tests": [], "diagnosis": None,
         "flagged": [{"what": "operator.attrgetter", "where": "assignment1/layer_norm.py:7", "how": "source"}]
         if c.name == "LayerNorm" else [], **({"held": 10.0} if c.name == "LayerNorm" else {})}
        for c, p in zip(SPEC.components, [0, 8, 10, 6, 6], strict=True)]}
    path = tmp_path / "overrides.csv"
    path.write_text("student,component,points,reason\nada,LayerNorm,release,reviewed: honest getattr\n")
    granted = regrade.load_overrides(path, SPEC, {"ada"})
    assert granted == {"ada": {"LayerNorm": (None, "reviewed: honest getattr")}}
    released = regrade.apply_overrides(report, granted["ada"])
    assert released["score"] == 40 and released["components"][0]["override"]["points"] == 10.0
    assert regrade.apply_overrides(released, {}) == report
    found = summary.summarise(SPEC, [("ada", graded({**report, "batch": {"status": "graded"}}))])
    assert [(r["component"], r["held"], r["where"]) for r in found["flagged"]] == [
        ("LayerNorm", True, "assignment1/layer_norm.py:7")]
    assert found["held"] == [{"student": "ada", "component": "LayerNorm", "points": 10.0, "lines": [
        {"what": "operator.attrgetter", "where": "assignment1/layer_norm.py:7"}]}]
    released_summary = summary.summarise(SPEC, [("ada", graded({**released, "batch": {"status": "graded"}}))])
    assert released_summary["held"] == [] and not any(r["held"] for r in released_summary["flagged"])


def test_a_held_component_is_said_held_for_review_with_its_lines_wherever_it_is_shown():
    """Issue 51: the class summary lists every held component (past the 20 findings its other table
    shows) with its lines, and the student's Gradescope feedback says the points are held for review
    and which line flagged them, never "no points lost"; once released, the override says so instead."""
    from rich.console import Console

    from grader.batch import outputs, summary

    def report(i: int) -> dict:
        return {"score": 30, "max_score": 40, "components": [
            {"name": c.name, "score": p, "max_score": c.points, "forbidden": [], "tests": [], "diagnosis": None,
             "flagged": [{"what": "gc", "where": f"assignment1/layer_norm.py:{i}", "how": "source"}]
             if c.name == "LayerNorm" else [], **({"held": 10.0} if c.name == "LayerNorm" else {})}
            for c, p in zip(SPEC.components, [0, 8, 10, 6, 6], strict=True)], "batch": {"status": "graded"}}

    rows = [(f"student{i:02}", report(i)) for i in range(25)]
    console = Console(width=200, record=True, color_system=None)
    console.print(summary.render(summary.summarise(SPEC, [(s, graded(r)) for s, r in rows])))
    text = console.export_text()
    assert "Held for review" in text and all(f"student{i:02}" in text for i in range(25)), text
    assert "held 10 pts: gc at assignment1/layer_norm.py:24" in text
    said = outputs.gradescope(rows[0][1])["tests"][0]["output"]
    assert outputs.gradescope(rows[0][1])["tests"][0]["extra_data"] == {"held": 10.0}
    assert said.startswith("Held for review: its 10 points are at 0") and "- gc at assignment1/layer_norm.py:0" in said
    assert "no points lost" not in said
    released = regrade.apply_overrides(rows[0][1], {"LayerNorm": (None, "reviewed")})
    said = outputs.gradescope(released)["tests"][0]["output"]
    assert said.startswith("Override: 10 points instead of the 0 graded: reviewed") and "Held" not in said
    assert "extra_data" not in outputs.gradescope(released)["tests"][0]


@pytest.mark.parametrize("rows, bad", [
    ("nobody,LayerNorm,5,x", "'nobody'"), ("ada,RMSNorm,5,x", "'RMSNorm'"), ("ada,LayerNorm,11,x", "'11'"),
    ("ada,LayerNorm,-1,x", "'-1'"), ("ada,LayerNorm,many,x", "'many'"), ("ada,LayerNorm,nan,x", "'nan'"),
    ("ada,LayerNorm,5,x\nada,LayerNorm,6,y", "second"),
])
def test_a_bad_override_is_one_error_naming_it(tmp_path, rows, bad):
    path = tmp_path / "overrides.csv"
    path.write_text("student,component,points,reason\n" + rows + "\n")
    with pytest.raises(ConfigError, match=bad):
        regrade.load_overrides(path, SPEC, {"ada", "bob"})
