"""Hypothesis strategies for the kit's unit tests of the judging stages, and the hand-made outcomes they
compose: what a grading's checks could have said, over the checks of the kit's own course.toml, with no
sandbox (tests/kit/test_unit_*.py)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from grader import load_course
from grader.course import Assignment, Component
from grader.judging.attribution import Blame
from grader.judging.scoring import Judged, score
from grader.results import Outcome
from tests.kit.conftest import ROOT

COURSE = load_course(ROOT / "course.toml")
ASSIGNMENTS = list(COURSE.assignments.values())
COMPONENTS = [c for a in ASSIGNMENTS for c in a.components]
COMPOSITES = [c for c in COMPONENTS if c.depends]
# derandomized as the grading suites are; small: each example is a whole assignment's outcomes
KIT = settings(derandomize=True, max_examples=40, deadline=None, database=None,
               suppress_health_check=[HealthCheck.too_slow])

PASSED = Outcome("passed")
words = st.text(st.sampled_from("abcdefgh xyz_(),."), max_size=30)
# what a check that ran and did not pass says
failures = st.builds(Outcome, status=st.sampled_from(["failed", "error"]),
                     reason=st.sampled_from(["mismatch", "exception", "crash", "not_attempted"]), message=words)
timeouts = st.builds(Outcome, status=st.just("timeout"), reason=st.just("timeout"), message=words)
ran = st.one_of(st.just(PASSED), failures, timeouts)  # a check that ran here
# a check that could not run here for reasons outside the submission: out of the proportion
not_counted = st.builds(Outcome, status=st.just("skipped"), reason=st.sampled_from(["unavailable", "no_cuda"]))
assignments = st.sampled_from(ASSIGNMENTS)
composites = st.sampled_from(COMPOSITES)


def assignment_of(component: Component) -> Assignment:
    return COURSE.assignment(component.assignment)


def component(name: str) -> Component:
    return next(c for c in COMPONENTS if c.name == name)


def checks_of(assignment: Assignment) -> list[str]:
    return [chk.id for c in assignment.components for chk in c.checks]


@st.composite
def results(draw, assignment: Assignment, outcomes=ran) -> dict[str, Outcome]:
    """An outcome for every check of `assignment`."""
    return {check: draw(outcomes) for check in checks_of(assignment)}


@st.composite
def graded(draw, outcomes=ran) -> tuple[Assignment, dict[str, Outcome]]:
    """An assignment of the course and an outcome for each of its checks."""
    assignment = draw(assignments)
    return assignment, draw(results(assignment, outcomes))


def all_passed(assignment: Assignment) -> dict[str, Outcome]:
    return dict.fromkeys(checks_of(assignment), PASSED)


def scored(assignment: Assignment, outcomes: dict[str, Outcome], *, blame: dict[str, Blame] | None = None,
           unavailable: dict[str, Outcome | None] | None = None,
           forbidden: dict[str, tuple[list[dict], list[dict]]] | None = None):
    """grader.judging.scoring's Report of hand-made outcomes, as a grading of the reference tree scores them."""
    return score(COURSE, assignment, Path("submission"),
                 Judged(outcomes, unavailable or {}, blame or {}, forbidden or {}), 1.0)


# text a submission makes that a report shows (a message, a frame): words short and long, spaces, escapes,
# markup, a frame's head, wide characters
submission_texts = st.lists(st.sampled_from(["a", "word", "forward", "A" * 90, "\x1b[2J", "\u202e", "[bold]", " ",
                                             "  ", "\n", "assignment1/layer_norm.py:12 in forward:", "…", "x" * 200,
                                             "注意力"]), max_size=60).map("".join)
# every control character (C0, DEL, C1) and every direction mark, override and isolate (Trojan Source)
ACTING = frozenset({chr(c) for c in (*range(0x20), *range(0x7f, 0xa0))}
                   | set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
acting_texts = st.text(alphabet=st.sampled_from(sorted(ACTING | set("ab =+\\x"))))
