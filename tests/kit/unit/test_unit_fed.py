"""The fed run's boundary (grader.suite.fed): what the submission's parts answer is used by the reference's
composite in the grader only where it has the form of the reference's part's answer on the same inputs
(its twin on the meta device); anything else is no evidence (Unsupported), never computed on."""

import pytest
import torch

from grader.suite.fed.forms import Unsupported, entries, fitted

LIKE = torch.empty(2, 3, 4, device="meta")


class Lying(torch.Tensor):
    pass


def test_an_answer_of_the_reference_parts_form_is_taken_as_it_came():
    got = torch.randn(2, 3, 4)
    assert fitted(got, LIKE) is got
    pair = (torch.randn(2, 3, 4), torch.zeros(2, 3, 3))
    assert fitted(pair, (LIKE, torch.empty(2, 3, 3, device="meta"))) == pair


@pytest.mark.parametrize("got", [
    torch.randn(1, 1_000_000),  # what would make the composite compute on a million positions
    torch.randn(2, 3, 4).double(), torch.randn(2, 3, 4).as_subclass(Lying), [torch.randn(2, 3, 4)],
    "a string", None, (torch.randn(2, 3, 4),)],
    ids=["shape", "dtype", "subclass", "list", "text", "none", "tuple"])
def test_any_other_answer_is_no_evidence(got):
    with pytest.raises(Unsupported):
        fitted(got, LIKE)


def test_a_listing_is_read_only_where_each_entry_is_named():
    assert entries({"parameters": [["w", [2], "float32", True]]}, "parameters") == [["w", [2], "float32", True]]
    assert entries({"missing": ["w"]}, "missing", str) == ["w"]
    for bad in ({"parameters": [[3, [2]]]}, {"parameters": "w"}, {"parameters": [[]]}, [], None):
        with pytest.raises(Unsupported):
            entries(bad, "parameters")
