"""grader.pattern on hand-made tensors: which batch elements, positions, feature columns or
entries of a square map a failed comparison found wrong, the error's form, and whether a hint's
declared causes fit it (issue 44: the panel that tells the bug)."""

import dataclasses
import json

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import words
from grader.pattern import Hint, Kind, Pattern, default_axes, fits, found
from tests.kit import strategies as s

# derandomized as the grading suites are; each example is a few small tensors
SMALL = settings(derandomize=True, max_examples=40, deadline=None, database=None)
shapes = st.tuples(st.integers(2, 4), st.integers(2, 6), st.integers(2, 6))  # (B, T, C)


def _pattern(got: torch.Tensor, expected: torch.Tensor, hint: str = "", **kw) -> Pattern:
    result = found(got != expected, got, expected, hint, **kw)
    assert result is not None
    return result


def _base(shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + 3.0


@SMALL
@given(shape=shapes, data=st.data())
def test_one_wrong_batch_element_is_named(shape, data):
    B, T, C = shape
    i = data.draw(st.integers(0, B - 1))
    e = _base(shape)
    g = e.clone()
    g[i, data.draw(st.integers(0, T - 1)), data.draw(st.integers(0, C - 1))] += 1.0
    p = _pattern(g, e)
    assert Kind.SOME_BATCH in p.kinds and p.wrong == (i,) and p.batch == B, p


@SMALL
@given(shape=shapes, data=st.data())
def test_every_position_from_t_on_is_told_with_its_t(shape, data):
    B, T, C = shape
    t = data.draw(st.integers(1, T - 1))
    e = _base(shape)
    g = e.clone()
    g[:, t:] -= 0.5 + torch.rand(B, T - t, C, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    p = _pattern(g, e)
    kind = Kind.LAST_POSITION if t == T - 1 else Kind.FROM_POSITION
    assert kind in p.kinds and Kind.SOME_BATCH not in p.kinds, p
    assert (p.start if p.start is not None else T - 1) == t


def test_the_first_position_alone():
    e = _base((2, 5, 4))
    g = e.clone()
    g[:, 0] *= 2
    assert _pattern(g, e).kinds[0] == Kind.FIRST_POSITION


def test_each_batch_element_wrong_from_its_own_padding_start():
    e = _base((3, 6, 4))
    g = e.clone()
    g[0, 4:] += 1
    g[1, 2:] += 1
    g[2, 5:] += 1
    p = _pattern(g, e)
    assert p.kinds[0] == Kind.PADDED_TAIL and p.starts == {"0": 4, "1": 2, "2": 5}, p
    assert "from 4 in element 0, from 2 in element 1" in words.pattern(p)


@SMALL
@given(shape=shapes, odd=st.booleans())
def test_odd_or_even_feature_columns(shape, odd):
    C = shape[-1]
    e = _base(shape)
    g = e.clone()
    g[..., int(odd)::2] = 0.0  # a sine or cosine column made zero, the others right
    p = _pattern(g, e)
    # one wrong column of two is just that column, not "the odd ones"
    wanted = (Kind.ODD_FEATURES if odd else Kind.EVEN_FEATURES) if C > 2 else Kind.SOME_FEATURES
    assert wanted in p.kinds, p
    assert p.columns == tuple(range(int(odd), C, 2))[:12] and p.features == C, p


@SMALL
@given(shape=shapes, data=st.data())
def test_a_constant_per_feature_column_is_an_offset_per_feature(shape, data):
    B, T, C = shape
    shift = torch.tensor(data.draw(st.lists(st.floats(0.1, 2.0), min_size=C, max_size=C)), dtype=torch.float64)
    e = _base(shape)
    p = _pattern(e + shift, e)
    same = bool((shift - shift[0]).abs().max() <= 1e-3 * shift.abs().max() + 1e-7)
    assert (Kind.OFFSET if same else Kind.FEATURE_OFFSET) in p.kinds, (p, shift)
    assert Kind.EVERYWHERE in p.kinds


def test_one_wrong_column_or_position_is_said_in_the_singular():
    e = _base((1, 2, 2))
    g = e.clone()
    g[..., 1] += 1.0
    p = _pattern(g, e)
    assert p.kinds[0] == Kind.SOME_FEATURES and words.pattern(p).startswith("only feature column 1 of 2 is wrong")
    said = words.pattern(Pattern(kinds=("some_positions",), rows=(1, 4), positions=6))
    assert said.startswith("only positions 1 and 4 of 6 are wrong"), said


def test_one_factor_everywhere_is_a_scale():
    e = _base((2, 3, 4))
    p = _pattern(e * 0.5, e)
    assert Kind.SCALE in p.kinds and p.scale == 0.5, p
    assert "times the same factor (0.5)" in words.pattern(p)


def test_a_factor_per_feature_is_a_scale_per_feature():
    e = _base((2, 3, 4))
    p = _pattern(e * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64), e)
    assert Kind.FEATURE_SCALE in p.kinds, p


def _causal(T: int, diagonal: int = 0) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).tril(diagonal)[None, None]


@SMALL
@given(T=st.integers(2, 8))
def test_square_maps_off_by_one_above_or_on_the_diagonal(T):
    assert _pattern(_causal(T, 1), _causal(T)).kinds == (Kind.ABOVE_DIAGONAL,)
    assert _pattern(_causal(T, -1), _causal(T)).kinds == (Kind.DIAGONAL,)
    below = _causal(T).clone()
    below[..., T - 1, 0] = False
    assert _pattern(below, _causal(T)).kinds == (Kind.BELOW_DIAGONAL,)


def test_a_complement_is_everywhere_and_a_mixture_is_scattered():
    assert _pattern(~_causal(4), _causal(4)).kinds == (Kind.EVERYWHERE,)
    assert _pattern(_causal(4).transpose(-1, -2), _causal(4)).kinds == (Kind.SCATTERED,)


def test_nothing_to_tell_from_a_scalar_a_single_element_or_a_vector_without_axes():
    assert found(torch.tensor(True), torch.tensor(1.0), torch.tensor(0.0)) is None
    one = torch.ones(1, 1, 1)
    assert found(one != 0, one, one * 0) is None
    assert found(one != 0, one, one * 0, Hint("causes", "everywhere")) == Pattern(kinds=(), fits=("everywhere",))
    assert found(torch.ones(3, dtype=torch.bool), torch.ones(3), torch.zeros(3)) is None
    assert default_axes((2, 5)) == "BC" and default_axes((2, 1, 5, 5)) == "B.TK" and default_axes((2, 3, 4)) == "BTC"


def test_a_hint_keeps_its_declaration_through_a_prefix_and_its_axes():
    hint = "Second example. " + Hint("causes", "diagonal", axes="TC")
    assert isinstance(hint, Hint) and hint.fits == {Kind.DIAGONAL} and hint.axes == "TC"
    assert str(hint) == "Second example. causes"
    table = torch.zeros(5, 4)
    wrong = table.clone()
    wrong[2:] = 1.0  # a (max_len, d_model) table read as positions: not "batch elements 2 to 4"
    p = _pattern(wrong, table, hint)
    assert Kind.FROM_POSITION in p.kinds and Kind.SOME_BATCH not in p.kinds, p


kinds = st.sampled_from(list(Kind))


@SMALL
@given(observed=st.lists(kinds, max_size=3))
def test_causes_that_declare_nothing_fit_everything(observed):
    assert fits([str(k) for k in observed], [])


@SMALL
@given(kind=kinds)
def test_a_declared_kind_fits_itself_and_the_kinds_under_it(kind):
    assert fits([kind], [kind])
    parents = {Kind.FIRST_POSITION: Kind.SOME_POSITIONS, Kind.ODD_FEATURES: Kind.SOME_FEATURES,
               Kind.OFFSET: Kind.FEATURE_OFFSET, Kind.SCALE: Kind.FEATURE_SCALE}
    if kind in parents:
        assert fits([kind], [parents[kind]]) and not fits([parents[kind]], [kind])
    assert fits([kind], [Kind.SCATTERED]) == (kind == Kind.SCATTERED)


def test_the_fit_the_panel_words():
    # causes of a mask built off by one on the diagonal do not explain a mask that sees the next position
    above = Pattern(kinds=("above_diagonal",), fits=("diagonal", "scattered"))
    assert not words.hint_fits(above) and words.pattern_shown(above, tight=True)
    assert "only entries above the diagonal are wrong" in words.pattern(above)
    assert "usual causes would not give this pattern" in words.pattern(above)
    fitting = Pattern(kinds=("diagonal",), fits=("diagonal", "scattered"))
    assert words.hint_fits(fitting) and "usual causes" not in words.pattern(fitting)
    # shown where it says more than "everywhere", but not where several panels share a screen
    assert words.pattern_shown(fitting) and not words.pattern_shown(fitting, tight=True)
    assert not words.pattern_shown(Pattern(kinds=("everywhere",)))
    # a final norm's causes change every batch element alike: only the padded one is wrong
    alike = Pattern(kinds=("some_batch", "from_position"), wrong=(1,), batch=2, start=3, positions=5,
                    fits=("everywhere",), alike=True)
    said = words.pattern(alike)
    assert not words.hint_fits(alike) and said.startswith("only batch element 1 of 2 is wrong")
    assert "Every position from 3 on is wrong" in said and "changes every batch element alike" in said
    # a single wrong element cannot judge the causes: shown, but ranked after a check that can
    assert words.hint_fits(Pattern(kinds=(), fits=("everywhere",)))
    assert not words.judged(Pattern(kinds=(), fits=("everywhere",))) and words.judged(None)


PATTERN_KEYS = [*(f.name for f in dataclasses.fields(Pattern) if f.name != "start"), "from"]


@given(data=st.dictionaries(st.sampled_from(PATTERN_KEYS), s.json_values | st.lists(st.integers(0, 9))))
def test_a_pattern_read_from_any_json_is_worded_and_written_back_as_read(data):
    """A report's "pattern" written by hand: each key of another form is left unset, so wording it cannot
    fail, and what was read writes the same JSON again."""
    pattern = Pattern.from_json(data)
    assert pattern is not None
    words.pattern(pattern), words.pattern_shown(pattern), words.hint_fits(pattern), words.judged(pattern)
    assert Pattern.from_json(pattern.to_json()) == pattern


@given(pattern=s.patterns)
def test_a_pattern_comes_back_from_its_json_as_itself(pattern):
    assert Pattern.from_json(json.loads(json.dumps(pattern.to_json()))) == pattern
