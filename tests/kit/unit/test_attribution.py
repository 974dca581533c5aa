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

from tests.kit.kit_course import COURSE


def test_a_part_two_levels_down_is_swapped_in_where_the_part_between_passes():
    """DecoderLayer builds on ResidualConnection, which builds on LayerNorm. A LayerNorm whose default eps
    is wrong failed its own checks, passed under ResidualConnection's and failed a DecoderLayer check (the
    instructor's fresh draws): DecoderLayer lost 1 of 12 for it, since only its direct parts were looked
    at. Its failure is now laid on LayerNorm, and run again with the reference's LayerNorm."""
    from grader.judging.attribution import attribute
    from grader.results import Outcome, Reach

    spec = COURSE.assignment("assignment3")
    results = {chk.id: Outcome("passed") for comp in spec.components for chk in comp.checks if chk.tier != "cuda"}
    results["decoder_layer_matches_reference"] = Outcome("failed", "mismatch", "differs")
    asked: list[dict] = []

    def run(checks, reach=Reach.SWAPPED, **how):
        # LayerNorm fails its own checks; everything passes on the reference's parts, and on its own parts
        # (however reached) runs as it did
        if reach != Reach.SWAPPED:
            return {c: results[c] for c in checks}
        asked.append(checks)
        return {c: Outcome("failed", "mismatch", "differs") if c.startswith("layer_norm") else Outcome("passed")
                for c in checks}

    blame = attribute(COURSE, spec, results, run, swap=True)
    assert blame["decoder_layer_matches_reference"].parts == ("LayerNorm",)
    assert blame["decoder_layer_matches_reference"].on_reference == Outcome("passed")
    assert blame["decoder_layer_matches_reference"].told is None  # the control fails as it did: excused
    assert asked[-1]["decoder_layer_matches_reference"] == ("assignment1.layer_norm:LayerNorm",)
    assert "ResidualConnection" not in {p for b in blame.values() for p in b.parts}  # it passes: not swapped
