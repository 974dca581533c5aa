"""The report's sentences made from data (a diagnosis, waiting points), the same wherever they are shown:
the terminal report, batch feedback (text, HTML, Gradescope) and the student's JSON. Standard library
only: the batch's outputs import it without rich."""

from __future__ import annotations

import re

from grader.reveal import Reveal
from grader.suite.pattern import Kind, fits

# C0 but tab and newline, DEL, C1 (0x9b is a terminal's one-byte CSI): what makes text act on a terminal;
# and the direction marks and overrides, which make text read other than it is (in a terminal or a page)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # a line's: \n, \t too


def escaped(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, limit: int | None = None, *, line: bool = False) -> str:
    """Text the submission made (its names, messages, frames), made inert wherever it is shown: control
    characters written as \\x.. (ANSI escapes among them; newlines and tabs too where `line`: a frame is
    one line), cut to `limit` characters with a note of how many more. Cut before the escape too, so
    that megabytes cost no more than the limit."""
    text = str(text)
    more = len(text) - limit if limit is not None and len(text) > limit else 0
    text = text[:limit] if more else text
    text = (_LINE_BREAK if line else CONTROL).sub(escaped, text)
    if more:
        text = text[:limit] + f" ... ({more} more characters)"
    return text


def failing_checks(n: int) -> str:
    """'the one failing public check', 'both failing public checks', 'all 3 failing public checks'."""
    if n == 1:
        return "the one failing public check"
    return "both failing public checks" if n == 2 else f"all {n} failing public checks"


def diagnosis(found: dict | None, reveal: Reveal | str = Reveal.FIX) -> str:
    """The diagnosis as course.toml [feedback] reveal allows: "fix" names the bug and the code it should
    be ("should be: ..."), "bug" the bug alone, "check" nothing (""). `found`: grader.judging.diagnosis's
    {"bug", "message", "what", "fix"}, completed by grader.judging.telling ("explains")."""
    if not found or Reveal(reveal) is Reveal.CHECK:
        return ""
    what, fix = str(found.get("what") or ""), str(found.get("fix") or "")
    explains = found.get("explains") or []
    bug = str(found.get("bug", ""))
    if not what:  # a diagnosis without the structured fields: its own sentence, or nothing past "fix"
        return str(found.get("message", "")) if Reveal(reveal) is Reveal.FIX else ""
    if ":" not in bug:  # a bug of the course's table: it explains every failing public check
        said = f"matches {what} on {failing_checks(len(explains) or 1)}."
    else:  # forensics or placement: what the values or the line show, in the check named
        checks = f" (in {', '.join(explains)})" if explains else ""
        said = f"{what}{checks}."
    # a one-line bug: the whole expression to put in place of the bug's (grader.authoring.fixes); else the table's words
    fix = str(found.get("expression") or fix)
    return said + (f" Should be: {fix}." if fix and Reveal(reveal) is Reveal.FIX else "")


def shown(found: dict | None, reveal: Reveal | str = Reveal.FIX) -> dict | None:
    """The diagnosis in a report's JSON at the level `reveal`: all of it ("fix"), without the code
    to write ("bug": no "fix", its message the bug alone), none ("check")."""
    if not found or Reveal(reveal) is Reveal.CHECK:
        return None
    if Reveal(reveal) is Reveal.FIX:
        return found
    kept = {k: v for k, v in found.items() if k not in ("fix", "line", "expression")}
    kept["message"] = diagnosis(found, Reveal.BUG) or ""
    return kept


def warning(found: dict) -> str:
    """A warning the code raised (grader.judging.warned) on one line: where, its category, its first sentence."""
    first = re.split(r"(?<=[.!?])\s", str(found.get("message", "")), maxsplit=1)[0]
    return (f"Warning in {found.get('component')} ({found.get('file')}:{found.get('line')}, during "
            f"{found.get('check')}): {found.get('category')}: {first}")


def weighed(found: list[dict]) -> str:
    """Where a component's points are not its count of checks passed: its checks weigh differently
    (course.toml `weights`; grader.judging.scoring). `found`: {"component", "passed", "checks", "earned",
    "total"} each (earned and total: weights)."""
    said = [f"{f['component']}'s {f['passed']} of {f['checks']} checks passed weigh {f['earned']:g} of "
            f"{f['total']:g}" for f in found]
    return f"Points follow check weights: {'; '.join(said)}." if said else ""


def standing(status: str, parts: list[str], provisional: float = 0.0) -> str:
    """A component's status in the table, with what its points depend on: "excused: LayerNorm" (its failures
    pass with the reference's LayerNorm), "waiting on LayerNorm: 4.5 pts for now"; else the status."""
    names = " and ".join(parts)
    if status == "excused" and names:
        return f"excused: {names}"
    if status == "waiting" or provisional:
        return f"waiting on {names}: {provisional:g} pts for now" if names else f"waiting: {provisional:g} pts for now"
    return str(status)


def not_working(name: str, file: str, student: bool) -> str:
    """Where every failure here is excused or waits on a part of an earlier assignment: the points are
    whole, the model is not."""
    return (f"The points here are whole, but the model does not work yet: your {name} ({file}) fails its own "
            f"{'public ' * student}checks, and the checks here that failed run through it.")


def also(same: list[str], rest: list[str], hidden: list[str], *, diagnosed: bool, tight: bool = False) -> str:
    """The other failed checks: those the diagnosed bug explains counted (`same`), each public one it does
    not explain named (`rest`), the hidden ones (it does not read them) named, counted where `tight`."""
    n = len(same) + len(rest) + len(hidden)
    more = " (grade --verbose shows each)." if tight else ". grade --verbose shows each."
    hid = [f"{len(hidden)} hidden"] if tight and hidden else [f"{i} (hidden)" for i in hidden]
    if tight and len(rest) > 2:  # panels share one screen: a few names, else a count
        rest = [f"{len(rest)} public"]
    if not diagnosed:
        return f"Also failed ({n}): {', '.join([*rest, *hid])}{more}"
    said = [f"{len(same)} by the same bug"] if same else []
    said += [f"not explained by it: {', '.join(rest)}"] if rest else []
    unread = f"{len(hidden)} hidden" if tight else f"hidden, which the diagnosis does not read: {', '.join(hidden)}"
    said += [unread] if hidden else []
    return f"Also failed ({n}): {'; '.join(said)}{more}"


def for_now(parts: str, one: bool, checks: int = 2) -> str:
    """What waiting points are, the same words in a component's panel and under the table."""
    they = "they are" if checks > 1 else "it is"
    return (f"{'Their' if checks > 1 else 'Its'} points count for now (in the total); once {parts} "
            f"pass{'es' * one} {'its' if one else 'their'} own checks {they} graded again, and "
            + ("each check that still fails then loses its points." if checks > 1 else
               "if it still fails, it then loses its points."))


def _listed(items: list, limit: int = 6) -> str:
    shown = [str(i) for i in items[:limit]] + (["..."] if len(items) > limit else [])
    return ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else "".join(shown)


def _many(what: str, items: list, n: int) -> str:
    """'only position 3 of 6 is wrong.', 'only positions 1 and 4 of 6 are wrong.'"""
    if len(items) == 1:
        return f"only {what} {items[0]} of {n} is wrong."
    return f"only {what}s {_listed(items)} of {n} are wrong."


def _batch(found: dict) -> str:
    wrong = [int(i) for i in found.get("wrong", [])]
    n = int(found.get("batch", 0))
    which = f"batch element {wrong[0]}" if len(wrong) == 1 else f"batch elements {_listed(wrong)}"
    return f"only {which} of {n} {'is' if len(wrong) == 1 else 'are'} wrong; the others match."


def _where(kind: str, found: dict) -> str:
    """One location kind (grader.suite.pattern.Kind) in words."""
    n = found.get("positions", 0)
    said: dict[str, str] = {  # (a kind read back from JSON is a plain string, equal to its Kind)
        Kind.FIRST_POSITION: "only position 0 (the first) is wrong; the later positions match.",
        Kind.LAST_POSITION: f"only the last position ({n - 1}) is wrong; the earlier ones match.",
        Kind.FROM_POSITION: f"every position from {found.get('from')} on is wrong; the ones before it match.",
        Kind.PADDED_TAIL: "in each batch element the positions from its own point on are wrong ("
                       + ", ".join(f"from {s} in element {i}" for i, s in list(found.get("starts", {}).items())[:4])
                       + "), the ones before match: the point differs between elements, as padding does.",
        Kind.SOME_POSITIONS: _many("position", found.get("rows", []), n),
        Kind.ODD_FEATURES: f"only odd feature columns ({_listed(found.get('columns', []))}) are wrong; "
                        "the even ones match.",
        Kind.EVEN_FEATURES: f"only even feature columns ({_listed(found.get('columns', []))}) are wrong; "
                         "the odd ones match.",
        Kind.SOME_FEATURES: _many("feature column", found.get("columns", []), found.get("features", 0)),
        Kind.DIAGONAL: "only the diagonal is wrong (row i, column i: a position and itself); the rest matches.",
        Kind.ABOVE_DIAGONAL: "only entries above the diagonal are wrong (column j after row i: a later key); "
                          "the diagonal and below match.",
        Kind.BELOW_DIAGONAL: "only entries below the diagonal are wrong (column j before row i: an earlier key); "
                          "the diagonal and above match.",
    }
    return said.get(kind, "")


def _form(kind: str, found: dict) -> str:
    """The error's form (grader.suite.pattern.FORMS) in words."""
    said: dict[str, str] = {
        Kind.OFFSET: f"every value is off by the same amount ({found.get('offset', 0):.4g}).",
        Kind.FEATURE_OFFSET: "each feature column is off by its own constant amount (got - expected: "
                          f"{_listed(found.get('offsets', []), 4)}).",
        Kind.SCALE: f"every value is the expected times the same factor ({found.get('scale', 0):.4g}).",
        Kind.FEATURE_SCALE: "each feature column is the expected times its own factor ("
                         f"{_listed(found.get('scales', []), 4)}).",
    }
    return said.get(kind, "")


def pattern(found: dict) -> str:
    """What a check found wrong (grader.suite.pattern's data: "kinds" and what they need), and where
    the check's likely causes do not fit it, that it rules them out."""
    kinds = [str(k) for k in found.get("kinds", [Kind.SOME_BATCH] if "wrong" in found else [])]
    said = [_batch(found)] if Kind.SOME_BATCH in kinds else []
    said += [s for s in (_where(k, found) for k in kinds) if s][:1]
    said += [s for s in (_form(k, found) for k in kinds) if s][:1]
    if not said:
        said = ["every element is wrong." if Kind.EVERYWHERE in kinds else "some elements are wrong, in no "
                "pattern of batch elements, positions or feature columns."]
    text = " ".join(s[0].upper() + s[1:] if i else s for i, s in enumerate(said))
    if found.get("alike") and Kind.SOME_BATCH in kinds:
        text += (" So the cause is not one that changes every batch element alike, as this check's usual causes "
                 "would: look at what differs between them (their padding, their mask).")
    elif not fits(kinds, found.get("fits", [])):
        text += " This check's usual causes would not give this pattern: look at what differs where it is wrong."
    return text


def drawn(value: str) -> str:
    """The set of inputs a failure was found on (Outcome.details["drawn"], grader.suite.draws)."""
    if value == "afresh":  # grader.results.Drawn.AFRESH (grader.results imports this module)
        return ("drawn afresh for this grading: the check passed on the inputs your own run draws, and "
                "must hold on any")
    return str(value)


def hint_fits(details: dict) -> bool:
    """Whether a check's hint (its likely causes) fits what failed: the kinds its causes declare
    explain the pattern found (grader.suite.pattern.fits); a hint that declares none fits everything."""
    found = details.get("pattern") or {}
    if "kinds" not in found:  # a pattern of before the kinds: only some batch elements, causes alike or not
        return not found.get("alike")
    return fits(found["kinds"], found.get("fits", []))


def judged(details: dict) -> bool:
    """False where a check's hint declares the patterns its causes explain but what failed shows none
    to judge them by (a single element): grader.judging.telling prefers a check that can tell."""
    found = details.get("pattern") or {}
    return not (found.get("fits") and "kinds" in found and not found["kinds"])


def pattern_shown(details: dict, tight: bool = False) -> bool:
    """Whether a panel words the pattern: where the hint's causes do not fit it (it stands in for
    them), where only some batch elements are wrong, and (but where several panels share one
    screen: `tight`) where it found more than "everywhere" or "in no form"."""
    found = details.get("pattern") or {}
    kinds = set(found.get("kinds", [Kind.SOME_BATCH])) if found else set()
    if not found or not hint_fits(details) or Kind.SOME_BATCH in kinds:
        return bool(found)
    return not tight and bool(kinds - {Kind.EVERYWHERE, Kind.SCATTERED})


def elided(text: str, lines: int = 6) -> str:
    """At most `lines` lines (a tensor's rows beyond them are left to --verbose)."""
    kept = text.splitlines()
    if len(kept) <= lines:
        return text
    return "\n".join([*kept[:lines], f"... ({len(kept) - lines} more lines: grade --verbose shows them)"])


ROW_CHARS = 80  # of a value's line per terminal row: the value column of a panel at 100 columns is wider


def rows(text: str, lines: int, width: int = ROW_CHARS) -> str:
    """At most about `lines` terminal rows of `width` characters (a long line takes several): a value
    of the submission's own text (a message, frames, names) that is one long line takes a panel's
    share of the screen, no more; the rest is for --verbose."""
    out: list[str] = []
    used = 0
    for line in text.splitlines():
        need = max(1, -(-len(line) // width))
        if used + need > lines + 1:  # the last row may be elided()'s own "... more lines"
            room = max(lines - used, 1) * width - 40
            out.append(f"{line[:room]} ... (grade --verbose shows all of it)")
            break
        out.append(line)
        used += need
    return "\n".join(out)


def example(text: str, lines: int, tight: bool = False) -> str:
    """An example cut to about `lines` lines without losing an input: each input (a line that starts at
    the margin, grader.suite.checks.describe) keeps its first line, so that the mask after a long x shows;
    lines to spare (at least 2 where not tight) go to the masks first, then to the inputs in order."""
    kept = text.splitlines()
    if len(kept) <= lines:
        return text
    starts = [i for i, line in enumerate(kept) if line[:1] not in (" ", "")]
    if len(starts) <= 1 or len(starts) > max(lines, 2) and not tight:  # not inputs of a few lines each
        return elided(text, lines)
    entries = [kept[i:end] for i, end in zip(starts, [*starts[1:], len(kept)], strict=True)]
    masks = [e for e in entries if "mask" in e[0].partition(":")[0].partition("=")[0]]
    if tight:  # one screen for several panels: the mask is the input that matters
        shown = [e[0] for e in masks] or kept[:lines]
        return "\n".join([*shown, f"... ({len(kept) - len(shown)} more lines: grade --verbose shows them)"])
    spare = max(2, lines - len(entries))
    take = {id(e): 1 for e in entries}
    for e in sorted(entries, key=lambda e: e not in masks):  # masks first, then in order
        more = min(spare, len(e) - 1)
        take[id(e)] += more
        spare -= more
    out = [line for e in entries for line in e[:take[id(e)]]]
    if len(out) == len(kept):
        return text
    return "\n".join([*out, f"... ({len(kept) - len(out)} more lines: grade --verbose shows them)"])
