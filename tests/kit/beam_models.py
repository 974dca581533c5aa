"""The reference solutions imported as a package of their own for the beam-search tests (tests/kit/unit/ and
sandbox/test_beam.py): the special tokens, the Hypothesis settings and a sequence's log-probability under a model."""

import torch
from hypothesis import settings

from grader.sandbox.child.tree import import_tree
from tests.kit.conftest import SOLUTIONS

PKG = "_beam_reference"
import_tree(SOLUTIONS, PKG)
SOS, EOS, PAD = 1, 2, 0
SETTINGS = settings(derandomize=True, max_examples=40, deadline=None, database=None)


def log_prob(model, src: list[int], ids) -> float:
    """The model's log-probability of `ids` after <sos>, teacher-forced through forward()."""
    if not ids:
        return 0.0
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[SOS, *ids[:-1]]]))  # (1, T, V)
        return float(torch.log_softmax(logits.double(), -1)[0, range(len(ids)), list(ids)].sum())
