"""The panel that tells the bug (issue 44): a hint's likely causes are shown only where they fit the
pattern of what failed (grader.pattern), otherwise the panel says what the pattern is. Planted
bugs whose pattern differs from what their check's hint explains, one that fits it, and correct code,
each graded as a student grades it."""

import dataclasses

from grader import words
from grader.reveal import Reveal
from tests.kit.conftest import SOLUTIONS, grade_report, mutant, report_lines

MASKS = "assignment2/masks.py"
# the causal mask off by one the other way: each position also sees the next one
SEES_THE_NEXT = {MASKS: [(".tril()[None, None]", ".tril(1)[None, None]")]}
# the target mask's causal part written inline, off by one: no position sees itself
INLINE_NO_DIAGONAL = {MASKS: [("return pad & causal", "return pad & torch.ones(tgt.size(1), tgt.size(1), "
                               "dtype=torch.bool, device=tgt.device).tril(-1)[None, None]")]}
# the padding put on the queries (rows) instead of the keys (columns): what the hint names
PADDING_ON_QUERIES = {MASKS: [("return pad & causal", "return pad.transpose(-1, -2) & causal")]}
# a sine where the cosine goes: only the odd feature columns of the table are wrong
SINE_FOR_COSINE = {"assignment1/positional_encoding.py": [("pe[:, 1::2] = torch.cos(", "pe[:, 1::2] = torch.sin(")]}
ONE_SCREEN = 45  # lines at 100 columns (tests/kit/sandbox/test_report_fits.py)


def _said(graded) -> str:
    lines = report_lines(graded)
    assert len(lines) <= ONE_SCREEN, "\n".join(lines)
    return " ".join(" ".join(lines).replace("│", " ").split())


def _verbose(graded) -> str:
    import io

    from rich.console import Console

    from grader.render import report

    out = io.StringIO()
    report.render(graded, Console(file=out, width=100, no_color=True, force_terminal=False), verbose=True)
    return " ".join(out.getvalue().replace("│", " ").split())


def _checks(graded, component: str) -> dict:
    c = next(c for c in graded.components if c.name == component)
    return {t.id: t for t in c.checks}, c


def test_a_causal_mask_that_sees_the_next_position_is_told_by_its_pattern(tmp_path):
    graded = grade_report(mutant(tmp_path, SEES_THE_NEXT), "assignment2")
    checks, causal = _checks(graded, "make_causal_mask")
    lower = checks["causal_mask_is_lower_triangular"].outcome.details
    # its causes (tril(-1): the diagonal; triu: everywhere) do not make only the future wrong
    assert lower.pattern.kinds == ("above_diagonal",) and not words.hint_fits(lower.pattern), lower
    assert causal.telling != "causal_mask_is_lower_triangular", causal.telling
    for said in (_said(graded), _said(dataclasses.replace(graded, reveal=Reveal.CHECK))):
        assert "only entries above the diagonal are wrong (column j after row i: a later key)" in said, said
        assert "tril(-1) or triu" not in said, said
    # in full (--verbose), that check's panel says the pattern and that its causes do not give it
    full = _verbose(graded)
    assert "usual causes would not give this pattern" in full and "tril(-1) or triu" not in full, full


def test_a_target_mask_without_its_diagonal_is_told_by_its_pattern(tmp_path):
    graded = grade_report(mutant(tmp_path, INLINE_NO_DIAGONAL), "assignment2")
    checks, tgt = _checks(graded, "make_tgt_mask")
    # the definition's shrunk example is one element: its causes cannot be judged there, so the stored
    # case (the whole diagonal wrong) is the panel
    assert checks["tgt_mask_matches_stored_reference"].outcome.details.pattern.kinds == ("diagonal",)
    assert not words.judged(checks["tgt_mask_matches_definition"].outcome.details.pattern)
    assert tgt.telling == "tgt_mask_matches_stored_reference", tgt.telling
    said = _said(dataclasses.replace(graded, reveal=Reveal.CHECK))
    assert "only the diagonal is wrong (row i, column i: a position and itself)" in said, said
    assert "| instead of &" not in said, said


def test_padding_on_the_queries_keeps_the_causes_that_name_it(tmp_path):
    graded = grade_report(mutant(tmp_path, PADDING_ON_QUERIES), "assignment2")
    checks, tgt = _checks(graded, "make_tgt_mask")
    shown = checks[tgt.telling].outcome.details
    assert tgt.telling == "tgt_mask_matches_definition" and words.hint_fits(shown.pattern), (tgt.telling, shown)
    assert "below_diagonal" in shown.pattern.kinds, shown
    said = _said(dataclasses.replace(graded, reveal=Reveal.CHECK))
    assert "the padding applied to queries instead of keys" in said, said


def test_a_positional_table_wrong_at_odd_columns_says_so(tmp_path):
    graded = grade_report(mutant(tmp_path, SINE_FOR_COSINE), "assignment1")
    checks, pe = _checks(graded, "PositionalEncoding")
    formula = checks["positional_encoding_matches_formula"].outcome.details
    assert formula.pattern.kinds[0] == "odd_features", formula
    said = _said(graded)
    assert "only odd feature columns (" in said and "the even ones match" in said, said
    assert "batch element" not in said, said  # the table's rows are positions (its hint's axes)


def test_correct_code_shows_no_pattern():
    for assignment in ("assignment1", "assignment2"):
        graded = grade_report(SOLUTIONS, assignment)
        assert all(t.outcome.status == "passed" for c in graded.components for t in c.checks
                   if t.outcome.reason not in ("unavailable", "no_cuda")), assignment
        said = _said(graded)
        assert "pattern" not in said and "All checks passed" in said, said
