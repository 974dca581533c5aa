"""What a warm grader keeps of the parts of earlier assignments (grader.grading.known_parts): the
next submission with the same files grades as a fresh grader grades it, whatever the first one did.

Most of the kit's gradings go through such graders (tests/kit/conftest.grade_report), so that every
property over the bug tables (a part's bug in an earlier assignment found under the composites built
on it: tests/kit/sandbox/test_attribution.py) also holds with what they kept.
"""

import pytest

from grader import load_course
from grader.grading.warm import Grader
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, as_json, mutant

# at import of the submission's transformer.py: every variance in its process is the biased one,
# whatever it asks for, so that assignment1's LayerNorm with the unbiased variance (a classic bug)
# passes its own checks wherever they run after it
HIDES_THE_BUG = ("import torch\n", "import torch\n_var = torch.Tensor.var\n"
                 "torch.Tensor.var = lambda self, *a, unbiased=True, **k: _var(self, *a, unbiased=False, **k)\n")


def _graded(report) -> dict:
    """The JSON, less what the machine's speed decides."""
    data = as_json(report)
    for key in ("submission", "duration_seconds", "timing", "performance"):
        data.pop(key, None)
    for component in data["components"]:
        for check in component["tests"]:
            check.pop("duration_seconds", None)
    return data


@pytest.mark.xdist_group("known_parts")
def test_a_submission_that_patched_torch_in_its_worker_leaves_nothing_for_the_next_one(tmp_path):
    """Two submissions hand in the same LayerNorm with the unbiased variance; the first one's
    transformer.py also patches torch at import so that, in its worker, that LayerNorm passes its own
    checks. Run where the first one's checks ran, LayerNorm would be kept as passing, and the second
    one's composites would lose the points that the LayerNorm's bug costs them (a bug charged twice).
    The parts run in a fresh worker instead: the second grades as a fresh grader grades it."""
    course = load_course(ROOT / "course.toml")
    bug = BUGS["layer_norm_unbiased_variance"]
    honest = mutant(tmp_path / "honest", bug.patches)
    hiding = mutant(tmp_path / "hiding", {**bug.patches, "assignment3/transformer.py": [HIDES_THE_BUG]})
    with Grader(course) as warm:
        warm.grade(assignment=warm.course.assignment("assignment3"), submission=hiding)
        kept = _graded(warm.grade(assignment=warm.course.assignment("assignment3"), submission=honest))
        assert warm.known_parts > 0, "the second grading ran the parts of assignments 1 and 2 again"
    with Grader(course) as fresh:
        alone = _graded(fresh.grade(assignment=fresh.course.assignment("assignment3"), submission=honest))
    assert kept == alone
    assert any(check.get("excused_by") for c in alone["components"] for check in c["tests"]), \
        "LayerNorm's bug costs the composites nothing: they are graded on the reference's LayerNorm"
