"""The trust boundary, reference parts: what a stand-in asks the grader to build is sized before it
is built, with bounds per part and per grading (issue 43, item 2)."""

import resource

import pytest

from tests.kit.reference_parts import ENCODER, _parts


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("args", [[10_000, 8, 2, 16], [10_000, 512, 8, 2048]],
                         ids=["ten_thousand_small_layers", "ten_thousand_full_layers"])
def test_a_composite_asking_for_a_huge_encoder_is_refused_before_it_is_built(args):
    """Ten thousand layers: tiny ones (10 M elements, under the per-part bound, but more than 100,000 tensors:
    built in full on main, seconds of the grader's time) and full-size ones (30 G elements: 5.75 GB
    and more on main before an outside cap stopped it). Both are refused with the grader's memory
    barely moved, the build stopped at its bound: what it made is a small part of what was asked for.
    The bound on tensors is an instance's here (the class's is 4,096), as the grading's is below."""
    parts = _parts()
    parts.MAX_TENSORS = 512
    before = _peak_mb()
    with pytest.raises(ValueError, match="part too large"):
        parts.answer({"build": ENCODER, "args": args, "kwargs": {}})
    assert _peak_mb() - before < 400, f"the grader's peak memory grew by {_peak_mb() - before:.0f} MB"
    assert not parts.built and parts.held == 0
    n_layers, d_model, _, d_ff = args
    asked = n_layers * (4 * d_model * d_model + 2 * d_model * d_ff)  # the layers' weight matrices alone
    assert parts.grading_built < asked / 100, f"{parts.grading_built:,} elements made of {asked:,} asked for"


def test_a_grading_stops_building_past_its_own_bound():
    """Each build within the per-part bound, asked for again and again with new arguments (no cache):
    past MAX_GRADING_NUMEL in all, the grader builds nothing more this grading."""
    parts = _parts()
    parts.MAX_GRADING_NUMEL = 3_000_000  # an instance's bound: the class's is 400 M (minutes of building)
    refused = 0
    for d_ff in range(64, 64 + 40):
        parts.allow(None, ())  # a new check each time: the per-check bound does not stop it first
        parts.allow(None, {ENCODER})
        try:
            parts.answer({"build": ENCODER, "args": [4, 64, 2, d_ff], "kwargs": {}})
        except ValueError as e:
            assert "part too large" in str(e)
            refused += 1
    assert refused and parts.grading_built <= parts.MAX_GRADING_NUMEL
