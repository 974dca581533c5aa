"""assert_close as the grading tests write it: grader.suite.checks.assert_close with its Compare given
keyword by keyword (typed, keyword-only; no **kwargs).

The same comparison, another spelling: a grading test's own source seeds its derandomized Hypothesis
draws (Hypothesis digests it; grader.suite.plugin keeps the digest), so the tests keep the calls they
were written with, and the examples a student is shown stay the same."""

import torch

from grader.suite import checks


def assert_close(got, expected: torch.Tensor, *, name: str, example: str = "", hint: str = "",
                 atol: float | torch.Tensor = 1e-5, rtol: float = 1e-4, mask: torch.Tensor | None = None,
                 truth: torch.Tensor | None = None, basis: str = "", alike: bool = False):
    """`got` must match `expected` elementwise (grader.suite.checks.Compare says how)."""
    return checks.assert_close(got, expected, name=name, example=example, hint=hint,
                               compare=checks.Compare(atol=atol, rtol=rtol, mask=mask, truth=truth, basis=basis,
                                                      alike=alike))
