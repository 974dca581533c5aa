"""Beam search (grader.translation.beam) on small random Transformers built from the reference solutions:
what it returns is the model's own probability, ranked best first."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.translation.beam import BeamOptions, beam_search
from tests.kit import strategies as s
from tests.kit.beam_models import EOS, PAD, PKG, SETTINGS, SOS, log_prob


@SETTINGS
@given(s.tiny_models(PKG, PAD), st.integers(1, 5), st.sampled_from([0.0, 0.6, 1.0]))
def test_hypotheses_carry_the_models_own_log_probability_ranked_best_first(drawn, beam, alpha):
    model, src, max_len = drawn
    found = beam_search(model, src, BeamOptions(beam_size=beam, length_penalty=alpha, max_len=max_len,
                                                sos=SOS, eos=EOS))
    assert 1 <= len(found) <= beam
    assert len({h.ids for h in found}) == len(found)
    assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
    for h in found:
        assert h.log_prob == pytest.approx(log_prob(model, src, h.ids), abs=1e-4)
        assert h.score == pytest.approx(h.log_prob / ((5 + len(h.ids)) / 6) ** alpha)
        assert (h.ids[-1:] == (EOS,) and EOS not in h.ids[:-1]) or (len(h.ids) == max_len - 1 and EOS not in h.ids)
