"""Hypothesis strategies of the kit's own tests, composed here: the hand-made outcomes the unit tests of the
judging stages draw (what a grading's checks could have said, over the checks of the kit's own course.toml,
with no sandbox: tests/kit/unit/), the texts a submission makes, small reference Transformers for
beam search, and translated dates for BLEU."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from grader import load_course
from grader.course import Assignment, Component
from grader.findings import Frame, Parameters, Sighting
from grader.judging.attribution import Blame
from grader.judging.scoring import Judged, score
from grader.pattern import Kind, Pattern
from grader.results import Details, Drawn, Outcome, Reason, Status, Tier
from tests.kit.conftest import ROOT

COURSE = load_course(ROOT / "course.toml")
ASSIGNMENTS = list(COURSE.assignments.values())
COMPONENTS = [c for a in ASSIGNMENTS for c in a.components]
COMPOSITES = [c for c in COMPONENTS if c.depends]
# derandomized as the grading suites are; small: each example is a whole assignment's outcomes
KIT = settings(derandomize=True, max_examples=40, deadline=None, database=None,
               suppress_health_check=[HealthCheck.too_slow])

PASSED = Outcome(Status.PASSED)
words = st.text(st.sampled_from("abcdefgh xyz_(),."), max_size=30)
# what a check that ran and did not pass says
failures = st.builds(Outcome, status=st.sampled_from([Status.FAILED, Status.ERROR]),
                     reason=st.sampled_from([Reason.MISMATCH, Reason.EXCEPTION, Reason.CRASH, Reason.NOT_ATTEMPTED]),
                     message=words)
timeouts = st.builds(Outcome, status=st.just(Status.TIMEOUT), reason=st.just(Reason.TIMEOUT), message=words)
ran = st.one_of(st.just(PASSED), failures, timeouts)  # a check that ran here
# a check that could not run here for reasons outside the submission: out of the proportion
not_counted = st.builds(Outcome, status=st.just(Status.SKIPPED),
                        reason=st.sampled_from([Reason.UNAVAILABLE, Reason.NO_CUDA]))
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
           forbidden: dict[str, tuple[list[Sighting], list[Sighting]]] | None = None):
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


# a failed comparison, with the figures a report shows
mismatches = st.builds(Outcome, status=st.just(Status.FAILED), reason=st.just(Reason.MISMATCH), message=words,
                       details=st.builds(Details, expected=st.floats(-9, 9).map(lambda x: f"{x:.6f}"),
                                         got=st.floats(-9, 9).map(lambda x: f"{x:.6f}")))


# anything a JSON document may hold (one written by hand, under a key the kit reads)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6)

# what a check that did not pass found beside its message, each field set or left as the check leaves it
_said = st.one_of(st.just(""), words.filter(bool))
_data = st.one_of(st.none(), st.dictionaries(st.sampled_from(["x", "seed"]), json_values, min_size=1, max_size=2))
_names = st.lists(st.sampled_from(["w.bias", "layers.1.w"]), max_size=2).map(tuple)
parameters = st.builds(Parameters, missing=_names, unexpected=_names, wrong_shape=_names, no_gradient=_names)
_ints = st.lists(st.integers(0, 9), max_size=3).map(tuple)
_kind_names = st.lists(st.sampled_from([str(k) for k in Kind]), max_size=2).map(tuple)
patterns = st.builds(Pattern, kinds=st.none() | _kind_names, fits=_kind_names, alike=st.booleans(), wrong=_ints,
                     batch=st.integers(0, 4), positions=st.integers(0, 9), start=st.none() | st.integers(0, 9),
                     starts=st.none() | st.dictionaries(st.sampled_from("012"), st.integers(0, 9), min_size=1),
                     rows=_ints, columns=_ints, features=st.integers(0, 9), offset=st.none() | st.floats(-2, 2),
                     offsets=st.lists(st.floats(-2, 2), max_size=2).map(tuple), scale=st.none() | st.floats(-2, 2),
                     scales=st.lists(st.floats(-2, 2), max_size=2).map(tuple))
details = st.builds(Details, expected=_said, got=_said, where=_said, example=_said, hint=_said, looks_like=_said,
                    basis=_said, subject=_said, max_abs_error=st.none() | st.floats(0, 9),
                    pattern=st.none() | patterns, inputs=_data, parameters=st.none() | parameters,
                    made=st.lists(st.builds(Frame, words.filter(bool), st.integers(1, 99), words.filter(bool), words),
                                  max_size=2).map(tuple),
                    drawn=st.sampled_from([None, *Drawn]))


@st.composite
def one_component_failing(draw):
    """(assignment, component, outcomes): every check passed but some public checks of one component."""
    comp = draw(st.sampled_from([c for c in COMPONENTS if sum(chk.tier == Tier.PUBLIC for chk in c.checks) > 1]))
    assignment = assignment_of(comp)
    public = [chk.id for chk in comp.checks if chk.tier == Tier.PUBLIC]
    failing = draw(st.lists(st.sampled_from(public), min_size=1, unique=True))
    return assignment, comp, {**all_passed(assignment), **{c: draw(mismatches) for c in failing}}


@st.composite
def tiny_models(draw, package: str, pad: int = 0):
    """(model, source ids, max_len): a random 1-layer reference Transformer (from the tree imported as
    `package`) whose output layer is scaled by a drawn factor (from nearly uniform to peaked next-token
    distributions: <eos> early or never)."""
    import torch

    from grader.sandbox.child.tree import resolve

    seed = draw(st.integers(0, 2**16))
    n_src, n_tgt = draw(st.integers(5, 12)), draw(st.integers(4, 9))
    torch.manual_seed(seed)
    model = resolve(package, "assignment3.transformer:Transformer")(
        n_src, n_tgt, d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0, max_len=16, pad_idx=pad)
    with torch.no_grad():
        model.projection.weight.mul_(draw(st.sampled_from([1.0, 4.0, 12.0])))
    src = draw(st.lists(st.integers(3, n_src - 1), min_size=1, max_size=7))
    return model.eval(), src, draw(st.integers(2, 10))


@st.composite
def translated_dates(draw):
    """(hypothesis, reference): an ISO date's tokens, and the same with a few tokens changed or cut."""
    ref = list(draw(st.dates()).isoformat())
    hyp = list(ref)
    for i in draw(st.lists(st.integers(0, len(ref) - 1), max_size=3)):
        hyp[i] = draw(st.sampled_from(list("0123456789-")))
    return hyp[:draw(st.integers(4, len(hyp)))], ref
