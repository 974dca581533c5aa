"""Every "expected" is what a correct implementation gives on the example shown (issue 44): a check
that compares with values built from the student's own output says so ("compared with") and is not
the panel while a check compared with a correct implementation's values failed."""

import ast
import re

import torch
import torch.nn.functional as F

from tests.grading.bugs import BUGS
from tests.kit.conftest import grade_report, mutant, report_lines

PER_FEATURE = "layer_norm_applies_gamma_and_beta_per_feature"


def _inputs(example: str) -> dict[str, torch.Tensor]:
    """The tensors of a printed example ("x: float32 (1, 4) = [[...]]"), as the student would type them in."""
    found = re.findall(r"^(\w+): float32 \([\d, ]*\) = (\[.*?\])$", example, flags=re.M | re.S)
    return {name: torch.tensor(ast.literal_eval(values.replace("\n", " "))) for name, values in found}


def test_gamma_and_beta_swapped_shows_what_torch_gives_and_the_check_with_a_true_expected(tmp_path):
    graded = grade_report(mutant(tmp_path, BUGS["layer_norm_gamma_and_beta_swapped"].patches), "assignment1")
    ln = next(c for c in graded.components if c.name == "LayerNorm")
    check = next(t for t in ln.checks if t.id == PER_FEATURE).outcome
    ins = _inputs(check.details.example)
    truth = F.layer_norm(ins["x"], ins["x"].shape[-1:], ins["gamma"], ins["beta"], eps=1e-5)
    value, index = re.fullmatch(r"(\S+) at index \[(.*)\]", check.details.expected).groups()
    at = tuple(int(i) for i in index.split(", "))
    assert abs(float(value) - truth[at].item()) < 1e-4, (value, truth)  # -1.58026 here, not -1.19672
    assert "without gamma and beta" in check.details.basis  # the comparison it made is said
    # the largest error's place comes with its expected and got
    assert re.fullmatch(r"largest error at index \[.*\]: expected \S+, got \S+", check.details.where)
    assert "elements" in check.message and "positions" not in check.message
    # the panel: a check whose expected a correct LayerNorm gives, not the one built from the student's output
    assert ln.telling != PER_FEATURE and ln.telling is not None
    assert not next(t for t in ln.checks if t.id == ln.telling).outcome.details.basis
    lines = report_lines(graded)
    assert not any(f"failed  {PER_FEATURE}" in line for line in lines), "\n".join(lines)
