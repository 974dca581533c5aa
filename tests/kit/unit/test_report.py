"""The terminal report: readable without a TTY or colour, and inert to what a submission prints."""

import io
from pathlib import Path

from rich.console import Console

from grader import course as config
from grader.findings import Seen, Sighting
from grader.judging import scoring
from grader.judging.attribution import Blame
from grader.render import report
from grader.results import Details, Outcome
from tests.kit.conftest import ROOT

HOSTILE = "[bold red]markup[/] \x1b[31mred\x1b[0m [link=http://x]link[/link]"


def render(results: dict[str, Outcome], blame=None, width: int = 100, verbose: bool = False) -> str:
    course = config.load(ROOT / "course.toml")
    assignment = course.assignment("assignment1")
    result = scoring.score(course, assignment, Path("/sub"), scoring.Judged(results, blame=blame or {}), 1.25)
    out = io.StringIO()
    report.render(result, Console(file=out, width=width, no_color=True, force_terminal=False), verbose=verbose)
    return out.getvalue()


def all_checks(status: Outcome) -> dict[str, Outcome]:
    course = config.load(ROOT / "course.toml")
    return {chk.id: status for comp in course.assignment("assignment1").components for chk in comp.checks}


def test_full_marks_say_so():
    text = render(all_checks(Outcome("passed")))
    assert "All checks passed: 40 / 40." in text
    assert "Start here" not in text


def test_a_failed_check_shows_expected_got_error_where_example_and_hint():
    results = all_checks(Outcome("passed"))
    results["layer_norm_matches_torch"] = Outcome(
        "failed", "mismatch", "LayerNorm output differs", Details(
            expected="0.5 at index [0, 1]", got="0.25 at index [0, 1]", max_abs_error=0.25,
            where="largest error at index [0, 1]", example="x: float32 (1, 2) [1, 2]",
            hint="Divide by sqrt(var + eps)."))
    text = render(results)
    for part in ("layer_norm_matches_torch", "LayerNorm output differs", "0.5 at index [0, 1]",
                 "0.25 at index [0, 1]", "largest error at index [0, 1]", "x: float32 (1, 2)",
                 "Divide by sqrt(var + eps).", "Start here: LayerNorm in assignment1/layer_norm.py"):
        assert part in text, part
    assert "max abs error" in render(results, verbose=True)  # one screen: the where line says it


def test_not_attempted_components_are_named_and_start_here_points_at_the_first():
    text = render(all_checks(Outcome("error", "not_attempted", "not attempted (NotImplementedError)")))
    assert text.count("not attempted") >= 5
    assert "Start here: LayerNorm in assignment1/layer_norm.py (not attempted)" in text
    assert "0 / 40" in text


def test_what_a_submission_prints_is_shown_literally():
    results = all_checks(Outcome("passed"))
    results["feed_forward_matches_torch"] = Outcome("error", "exception", f"your code raised ValueError: {HOSTILE}",
                                                    output=HOSTILE)
    text = render(results)
    assert "\x1b" not in text
    assert "[bold red]markup[/]" in text and "[link=http://x]link[/link]" in text
    assert "\\x1b[31mred" in text


def test_no_colour_and_no_terminal_means_no_escape_codes():
    text = render(all_checks(Outcome("failed", "mismatch", "wrong")))
    assert "\x1b" not in text


def test_excused_failures_look_apart_and_name_the_part_to_fix():
    results = all_checks(Outcome("passed"))
    results["token_embedding_matches_torch"] = Outcome("failed", "mismatch", "TokenEmbedding output differs")
    results["transformer_embedding_matches_its_parts"] = Outcome("failed", "mismatch", "output differs")
    blame = {"transformer_embedding_matches_its_parts": Blame(("TokenEmbedding",), Outcome("passed"))}
    text = render(results, blame)
    assert "TransformerEmbedding (1 excused: fix your TokenEmbedding)" in text
    verbose = render(results, blame, verbose=True)
    assert "excused" in text and "Fix your TokenEmbedding" in verbose
    assert "TransformerEmbedding: 6 / 6" in verbose
    assert "failed  transformer_embedding_matches_its_parts" not in text  # no red panel for it
    assert "Start here: TokenEmbedding" in text


def test_a_composites_own_failure_says_it_fails_on_the_reference_parts_too():
    results = all_checks(Outcome("passed"))
    results["token_embedding_matches_torch"] = Outcome("failed", "mismatch", "TokenEmbedding output differs")
    results["transformer_embedding_matches_its_parts"] = Outcome("failed", "mismatch", "output differs")
    blame = {"transformer_embedding_matches_its_parts": Blame(("TokenEmbedding",), Outcome("failed", "mismatch", "x"))}
    text = render(results, blame, width=200)
    assert "fails with the reference's TokenEmbedding too" in text
    assert "TransformerEmbedding: 6 / 6" not in text  # counted: it loses its weight


def test_the_report_fits_80_columns():
    results = all_checks(Outcome("passed"))
    results["layer_norm_matches_torch"] = Outcome("failed", "mismatch", "LayerNorm output differs " * 8,
                                                  Details(example="x: float32 (1, 2) " + "1.23456789, " * 30))
    text = render(results, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_pass_that_a_parts_bug_hides_counts_as_the_failure_on_the_reference_parts():
    results = all_checks(Outcome("passed"))
    results["token_embedding_matches_torch"] = Outcome("failed", "mismatch", "TokenEmbedding output differs")
    on_reference = Outcome("failed", "mismatch", "TransformerEmbedding output differs on the reference's parts")
    text = render(results, {"transformer_embedding_matches_its_parts": Blame(("TokenEmbedding",), on_reference)},
                  width=200)
    assert "output differs on the reference's parts" in text and "hides one of this component's own" in text
    assert "TransformerEmbedding: 6 / 6" not in text


def test_one_screen_shows_the_most_telling_failure_in_full_and_names_the_others():
    results = all_checks(Outcome("passed"))
    results["layer_norm_matches_torch"] = Outcome("failed", "mismatch", "differs",
                                                  Details(example="x: " + "1.5, " * 40))
    results["layer_norm_rows_are_normalised"] = Outcome("failed", "mismatch", "rows differ",
                                                        Details(example="x: [1, 2]"))
    results["layer_norm_gradients_match_torch"] = Outcome("error", "exception", "your code raised ValueError: no")
    compact, verbose = render(results), render(results, verbose=True)
    assert "failed  layer_norm_rows_are_normalised" in compact  # a wrong value with the smallest example
    assert "failed  layer_norm_matches_torch" not in compact and "error  layer_norm_gradients" not in compact
    assert "Also failed (2): layer_norm_matches_torch, layer_norm_gradients_match_torch." in compact
    for shown in ("failed  layer_norm_matches_torch", "failed  layer_norm_rows_are_normalised",
                  "error  layer_norm_gradients_match_torch"):
        assert shown in verbose, shown


def test_long_values_are_cut_to_a_few_lines_unless_verbose():
    results = all_checks(Outcome("passed"))
    rows = "\n".join(f"[{i}, {i + 1}]" for i in range(20))
    results["layer_norm_matches_torch"] = Outcome("failed", "mismatch", "differs", Details(expected=rows))
    compact, verbose = render(results), render(results, verbose=True)
    assert "[19, 20]" in verbose and "[19, 20]" not in compact
    assert f"[{report.ELIDE_LINES - 1}, {report.ELIDE_LINES}]" in compact
    assert f"({20 - report.ELIDE_LINES} more lines: grade --verbose shows them)" in compact


def test_a_held_component_says_held_for_review_and_which_lines_flagged_it():
    """Issue 51: under the default `[policy] flagged = "hold"` a flagged component's panel says its
    points are held at 0 for review and lists the lines, never "no points lost"; under "count" it does."""
    course = config.load(ROOT / "course.toml")
    assignment = course.assignment("assignment1")
    flag = Sighting("operator.attrgetter", "assignment1/layer_norm.py:7", Seen.SOURCE)

    def shown(hold: bool) -> str:
        judged = scoring.Judged(all_checks(Outcome("passed")), forbidden={"LayerNorm": ([], [flag])}, hold=hold)
        out = io.StringIO()
        report.render(scoring.score(course, assignment, Path("/sub"), judged, 1.25),
                      Console(file=out, width=100, no_color=True, force_terminal=False))
        return out.getvalue()

    held, counted = shown(True), shown(False)
    assert "Held for review: its 10 points are at 0 until your instructor reviews these lines:" in held
    assert "operator.attrgetter at assignment1/layer_norm.py:7 (in the source)" in held
    assert "held for review" in held and "30 / 40" in held and "no points lost" not in held, held
    assert "no points lost" in counted and "40 / 40" in counted, counted
