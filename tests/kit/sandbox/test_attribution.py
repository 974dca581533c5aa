"""Fair grades, stated as properties over the kit's mutant tables (tests/kit/mutants.py).

- once: a bug in a part costs nothing in the components built on it;
- monotone: replacing a part or a composite of a submission with the reference (fixing a
  bug) never lowers any component's score, nor the total;
- own bugs count: a composite's own bug loses it marks even while its parts are broken.

Parts and composites come from course.toml's `depends`. Pairs: a composite's bug with a bug of every
part it builds on, directly or through other composites (assignments 1 to 3). assignment4's
composites are graded once per direct part (their checks are slow: they train a model), with
a part bug that costs the composite marks where its parts are not attributed.
"""

from functools import cache

import pytest

from tests.kit.conftest import full_marks, grade_json, mutant, scores
from tests.kit.kit_course import COURSE
from tests.kit.mutants import ASSIGNMENT4_BUGS, BUGS, patches

GRADED = ("assignment1", "assignment2", "assignment3")  # every part bug with every composite built on it
HOME = {c.name: a.name for a in COURSE.assignments.values() for c in a.components}
ALL_BUGS = {**BUGS, **ASSIGNMENT4_BUGS}


@cache
def builds_on(component: str) -> frozenset[str]:
    """Every component `component` builds on, directly or through others."""
    spec = next(c for a in COURSE.assignments.values() for c in a.components if c.name == component)
    return frozenset(spec.depends).union(*(builds_on(d) for d in spec.depends))


def _first_bug_per_component() -> dict[str, str]:
    first: dict[str, str] = {}
    for name, bug in BUGS.items():
        first.setdefault(bug.component, name)
    return first


ONE_BUG = _first_bug_per_component()
# (part bug, assignment holding a composite built on that part)
ONCE = sorted({(bug, HOME[c]) for bug in ONE_BUG.values() for c in HOME
               if HOME[c] in GRADED and BUGS[bug].component in builds_on(c)})
# (part bug, composite bug), the composite built on the part; a pair's tests share one worker (and
# its graded reports) under `--dist loadgroup`
PAIRS = [pytest.param(p, c, marks=pytest.mark.xdist_group(f"{p}+{c}"), id=f"{p}-{c}")
         for p, c in sorted((p, c) for p in ONE_BUG.values() for c in ONE_BUG.values()
                            if HOME[BUGS[c].component] in GRADED and BUGS[p].component in builds_on(BUGS[c].component))]

# assignment4: a bug of each direct part of each composite (one that costs the composite marks when
# parts are not attributed: it stops the model learning or breaks the masks), with a bug of the composite's own
PART_BUG = {"Transformer": "cross_attention_fed_the_decoder_input_as_keys", "Vocab": "vocab_specials_after_the_words",
            "collate": "collate_without_the_shift", "LabelSmoothingLoss": "label_smoothing_weights_swapped",
            "noam_lr": "noam_lr_warmup_exponent_sign", "make_pad_mask": "pad_mask_polarity_inverted",
            "make_tgt_mask": "tgt_mask_or_instead_of_and"}
COMPOSITE_BUG = {"train_epoch": "train_epoch_steps_the_scheduler_once_per_epoch",
                 "greedy_decode": "greedy_decode_predicts_after_eos"}
A4_PAIRS = [(PART_BUG[part], COMPOSITE_BUG[c.name]) for c in COURSE.assignment("assignment4").components
            for part in c.depends]
assert {ALL_BUGS[c].component for _, c in A4_PAIRS} == set(COMPOSITE_BUG)  # every composite of assignment4
# the tests of one composite's pairs share one worker, and its graded reports (the composite bug's,
# each part bug's)
ONCE += [pytest.param(p, "assignment4", marks=pytest.mark.xdist_group(f"assignment4+{c}"), id=f"{p}-assignment4")
         for p, c in A4_PAIRS]
PAIRS += [pytest.param(p, c, marks=pytest.mark.xdist_group(f"assignment4+{c}"), id=f"{p}-{c}") for p, c in A4_PAIRS]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The report of solutions/ with these bugs, graded once per module (both tiers)."""
    reports: dict[tuple[tuple[str, ...], str], dict] = {}

    def get(bugs: tuple[str, ...], assignment: str) -> dict:
        key = (bugs, assignment)
        if key not in reports:
            reports[key] = grade_json(mutant(tmp_path_factory.mktemp("-".join(bugs)), patches(*bugs)), assignment)
        return reports[key]

    return get


@pytest.mark.parametrize(("bug", "assignment"), ONCE)
def test_a_bug_in_a_part_costs_nothing_in_the_components_built_on_it(graded, bug, assignment):
    report = graded((bug,), assignment)
    part = ALL_BUGS[bug].component
    lost = {name: score for name, score in scores(report).items() if score < full_marks(report)[name]}
    assert set(lost) <= {part}, f"{bug} cost points outside {part}: {lost}"
    for component in report["components"]:
        for check in component["tests"]:
            if check["status"] != "passed" and component["name"] != part:
                assert check.get("excused_by"), (component["name"], check["id"], check["message"])


@pytest.mark.parametrize(("part_bug", "composite_bug"), PAIRS)
def test_fixing_a_part_or_a_composite_never_lowers_a_grade(graded, part_bug, composite_bug):
    assignment = HOME[ALL_BUGS[composite_bug].component]
    both = graded((part_bug, composite_bug), assignment)
    for fixed in ((composite_bug,), (part_bug,)):
        after = graded(fixed, assignment)
        lowered = {n: (s, scores(after)[n]) for n, s in scores(both).items() if scores(after)[n] < s - 1e-9}
        assert not lowered, f"fixing one of {part_bug} + {composite_bug} lowered (before, after): {lowered}"
        assert after["score"] >= both["score"] - 1e-9


@pytest.mark.parametrize(("part_bug", "composite_bug"), PAIRS)
def test_a_composites_own_bug_counts_while_its_parts_are_broken(graded, part_bug, composite_bug):
    report = graded((part_bug, composite_bug), HOME[ALL_BUGS[composite_bug].component])
    composite = ALL_BUGS[composite_bug].component
    assert scores(report)[composite] < full_marks(report)[composite], (
        f"{composite_bug} went unpunished next to {part_bug}: {scores(report)}")
