"""The adversarial suite's checks that need no grading: a NaN or an infinity never compares equal, and
the submission's text reaches Gradescope's results inert, with no control character, ANSI escape or
direction override of the submission's (every hostile submission of tests/kit/attacks.py, graded through
the real CLI: tests/kit/sandbox/test_adversarial.py).
"""

import sys

import pytest

# the harness reads /proc; the kit's CI is Linux
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the adversarial suite reads /proc: Linux only")


@pytest.mark.parametrize("got, expected", [
    (float("nan"), float("nan")), (float("inf"), float("inf")), (float("-inf"), float("-inf")),
    (float("nan"), float("inf")), (1.0, float("nan")), (float("nan"), 1.0)])
def test_nan_and_inf_never_compare_equal(got, expected):
    import torch

    from grader.suite.checks import Compare, Mismatch, assert_close

    with pytest.raises(Mismatch):
        assert_close(torch.full((3,), got), torch.full((3,), expected), name="x")
    assert_close(torch.tensor([got, 1.0]), torch.tensor([expected, 1.0]), name="x",
                 compare=Compare(mask=torch.tensor([False, True])))  # where the check does not look, nothing is judged


@pytest.mark.parametrize("text", ["\x1b[2J\x1b[H", "\x1b]8;;http://x\x07link", "\r\x08 \x9b31m", "\u202eevil"])
def test_the_submissions_text_reaches_gradescope_inert(text):
    """Exception types and messages, in the visible and the hidden checks' output and in the top
    output, carry no control character, ANSI escape or direction override of the submission's."""
    from grader.gradescope.results import results

    message = f"your code raised {text}E: {text}" + "m" * 100_000
    tests = [{"id": f"check_{tier}", "status": "error", "hidden": tier == "hidden", "message": message}
             for tier in ("public", "hidden")]
    report = {"assignment": "assignment1", "score": 0.0, "max_score": 6.0, "notes": [f"note {text}"],
              "isolation": "namespaces",
              "components": [{"name": "LayerNorm", "score": 0.0, "max_score": 6.0, "tests": tests}]}
    got = results(report, execution_time=1.0)
    outputs = [got["output"], *(t["output"] for t in got["tests"])]
    assert len(outputs) == 3  # the component's test, its hidden detail, the top
    for out in outputs:
        assert not any(c in out for c in "\x1b\x07\r\x08\x9b\u202e"), out[:200]
    assert all(len(t["output"]) < 20_000 for t in got["tests"] if t["name"].endswith("hidden checks"))
