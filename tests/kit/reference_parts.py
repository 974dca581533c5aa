"""The reference's parts as a grading builds them, allowed the Encoder alone (tests/kit/unit/ and
sandbox/test_boundary_parts.py)."""

from tests.kit.conftest import ROOT

ENCODER = "assignment3.encoder:Encoder"


def _parts():
    from grader.suite.parts.serve import ReferenceParts

    parts = ReferenceParts(None)
    parts.allow(ROOT / "solutions", {ENCODER})
    return parts
