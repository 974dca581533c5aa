"""grader.trim.rows, held to what a reader sees: the text it keeps, rendered by rich in a column of the
width it counts with, takes at most the rows it was given (elided()'s last "... more lines" aside),
whatever the submission's text holds: long words, spaces, control characters escaped to several
characters. The forged-frames report (test_boundary_channels) failed one screen by a row on a machine
whose folders were longer, when rows counted characters rather than rows as wrapped."""

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from grader import trim
from tests.kit.strategies import ACTING, KIT, acting_texts, submission_texts


def rendered_rows(text: str, width: int) -> int:
    console = Console(width=width, file=None, color_system=None, force_terminal=False, record=True)
    with console.capture() as capture:
        console.print(Text(text), overflow="fold")
    return len(capture.get().splitlines())


@settings(KIT, max_examples=200)
@given(text=submission_texts, lines=st.integers(1, 8))
@example(text="x注" * 80, lines=3)  # a wide character that does not fit a row's end starts the next: 4 rows
def test_rows_keeps_at_most_the_rows_given_as_rich_wraps_them(text, lines):
    kept = trim.rows(text, lines)
    assert rendered_rows(kept, trim.ROW_CHARS) <= lines, kept


@settings(KIT, max_examples=100)
@given(text=submission_texts, lines=st.integers(1, 8))
def test_rows_keeps_text_that_fits_as_it_is_escaped(text, lines):
    shown = "\n".join(trim.CONTROL.sub(trim.escaped, text).splitlines())  # a trailing newline is no row
    if rendered_rows(shown, trim.ROW_CHARS) <= lines:
        assert trim.rows(text, lines) == shown
    else:
        assert trim.rows(text, lines).endswith("(grade --verbose shows all of it)")


@settings(KIT, max_examples=300)
@given(text=acting_texts)
def test_one_list_of_acting_characters_for_every_reader(text):
    """The report's text (trim.inert) and a batch's files (grader.batch.safe) escape the same characters:
    a line keeps none of them, a multi-line output only its newlines and tabs; a CSV cell is never a formula."""
    from grader.batch import safe

    for shown, kept in ((trim.inert(text, line=True), set()), (safe.inert(text), set()),
                        (trim.inert(text), {"\n", "\t"}), (safe.inert(text, lines=True), {"\n", "\t"})):
        assert not (set(shown) & ACTING) - kept, repr(shown)
    assert not safe.cell(text).startswith(("=", "+", "-", "@"))
