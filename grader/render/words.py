"""The report's sentences made from data (a diagnosis, waiting points), the same wherever they are shown:
the terminal report, batch feedback (text, HTML, Gradescope) and the student's JSON. Standard library
only: the batch's outputs import it without rich."""

from __future__ import annotations

from grader.judging.reveal import Reveal


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
    return said + (f" Should be: {fix}." if fix and Reveal(reveal) is Reveal.FIX else "")


def shown(found: dict | None, reveal: Reveal | str = Reveal.FIX) -> dict | None:
    """The diagnosis in a report's JSON at the level `reveal`: all of it ("fix"), without the code
    to write ("bug": no "fix", its message the bug alone), none ("check")."""
    if not found or Reveal(reveal) is Reveal.CHECK:
        return None
    if Reveal(reveal) is Reveal.FIX:
        return found
    kept = {k: v for k, v in found.items() if k not in ("fix", "line")}
    kept["message"] = diagnosis(found, Reveal.BUG) or ""
    return kept


def for_now(parts: str, one: bool, checks: int = 2) -> str:
    """What waiting points are, the same words in a component's panel and under the table."""
    they = "they are" if checks > 1 else "it is"
    return (f"{'Their' if checks > 1 else 'Its'} points count for now (in the total); once {parts} "
            f"pass{'es' * one} {'its' if one else 'their'} own checks {they} graded again, and "
            + ("each check that still fails then loses its points." if checks > 1 else
               "if it still fails, it then loses its points."))


def pattern(found: dict) -> str:
    """Which batch elements a check found wrong ({"wrong", "batch", "alike"}, grader.suite.checks), and
    what that rules out where the check's likely causes would change every batch element alike."""
    wrong = [int(i) for i in found.get("wrong", [])]
    n = int(found.get("batch", 0))
    which = f"batch element {wrong[0]}" if len(wrong) == 1 else \
        "batch elements " + ", ".join(map(str, wrong[:-1])) + f" and {wrong[-1]}"
    said = f"only {which} of {n} {'is' if len(wrong) == 1 else 'are'} wrong; the others match."
    if found.get("alike"):
        said += (" So the cause is not one that changes every batch element alike, as this check's usual causes "
                 "would: look at what differs between them (their padding, their mask).")
    return said


def hint_fits(details: dict) -> bool:
    """Whether a check's hint (its likely causes) fits what failed: not where only some batch elements
    are wrong and its causes would make them all wrong alike."""
    return not (details.get("pattern") or {}).get("alike")


def elided(text: str, lines: int = 6) -> str:
    """At most `lines` lines (a tensor's rows beyond them are left to --verbose)."""
    kept = text.splitlines()
    if len(kept) <= lines:
        return text
    return "\n".join([*kept[:lines], f"... ({len(kept) - lines} more lines: grade --verbose shows them)"])


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
