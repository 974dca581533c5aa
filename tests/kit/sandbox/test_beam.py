"""Beam search (grader.translation.beam) on small random Transformers built from the reference solutions:
it is greedy decoding at beam size 1, it never ends on a less probable translation than greedy decoding
does, and a bad argument is a ValueError naming it."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.sandbox.child.tree import resolve
from grader.translation.beam import BeamOptions, beam_search
from tests.kit import strategies as s
from tests.kit.beam_models import EOS, PAD, PKG, SETTINGS, SOS, log_prob


def greedy(model, src: list[int], max_len: int) -> list[int]:
    """The reference greedy_decode on the one sentence, without its <sos>."""
    greedy_decode = resolve(PKG, "assignment4.decoding:greedy_decode")
    return greedy_decode(model, torch.tensor([src]), max_len, SOS, EOS)[0, 1:].tolist()


@SETTINGS
@given(s.tiny_models(PKG, PAD))
def test_beam_size_one_is_greedy_decoding(drawn):
    model, src, max_len = drawn
    (best,) = beam_search(model, src, BeamOptions(beam_size=1, max_len=max_len, sos=SOS, eos=EOS))
    assert list(best.ids) == greedy(model, src, max_len)


@SETTINGS
@given(s.tiny_models(PKG, PAD), st.integers(2, 5))
def test_the_best_beam_is_never_less_probable_than_greedy_decoding(drawn, beam):
    model, src, max_len = drawn
    found = beam_search(model, src, BeamOptions(beam_size=beam, max_len=max_len, sos=SOS, eos=EOS))
    assert log_prob(model, src, found[0].ids) >= log_prob(model, src, greedy(model, src, max_len)) - 1e-5


@pytest.mark.parametrize("options, src, name", [
    (dict(beam_size=0), [3], "beam_size"), (dict(length_penalty=-0.5), [3], "length_penalty"),
    (dict(max_len=1), [3], "max_len"), ({}, [], "src_ids")])
def test_bad_arguments_raise_value_errors_naming_them(options, src, name):
    model = resolve(PKG, "assignment3.transformer:Transformer")(6, 6, d_model=8, n_heads=2, n_layers=1, d_ff=16)
    with pytest.raises(ValueError, match=name):
        beam_search(model, src, BeamOptions(**options))
