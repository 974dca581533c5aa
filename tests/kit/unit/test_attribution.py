"""Fair grades: a composite's failure is laid on a part two levels down (from course.toml's `depends`)
where the part between passes, and run again with the reference's part (the properties over the kit's
mutant tables, graded: tests/kit/sandbox/test_attribution.py).
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
