"""The report's sentences made from data (a diagnosis, waiting points), the same wherever they are shown:
the terminal report, batch feedback (text, HTML, Gradescope) and the student's JSON. Standard library
only: the batch's outputs import it without rich."""

from __future__ import annotations

import re

from grader.findings import Attributed, Attribution, Diagnosis, Found, Note, Noted
from grader.pattern import Kind, Pattern, fits
from grader.reveal import Reveal

# a check that did not run: not in the suite (grader.judging.scoring), not again on the reference's parts (attribution)
NOT_IN_SUITE = "this check did not run (not found in the grading suite)"
NOT_RUN_AGAIN = "this check did not run again on the reference's parts"
# a check that cannot run here (grader.grading.stages.score): a student's kit holds no hidden tier, a
# machine without CUDA runs no GPU check
HIDDEN_TIER = "hidden tier: graded by your instructor"
NO_CUDA = "no CUDA device here: GPU check not run"

# the JSON's performance (grader.grading.performance): what its numbers are, since the seconds alone
# depend on the machine; and a timing the submission's process sent that is no pair of numbers
MEASURED = ("forward + backward, median seconds of `repeat` steps after a warm-up; memory: peak "
            "allocated on a GPU, bytes saved for backward on the CPU")
MALFORMED_TIMINGS = "the submission's process sent malformed timings"


def noted(note: Note) -> str:
    """One of the report's notes (grader.findings.Note) in words: the terminal report's lines under the
    table, the JSON's "notes", the feedback's."""
    if note.kind == Noted.PUBLIC_ONLY:
        return "Public checks only: the hidden checks are run by your instructor."
    if note.kind == Noted.RESTARTED:
        return f"The submission's process was restarted: {note.detail}"
    if note.kind == Noted.NOT_STAGED:
        return f"Not graded, not a regular file under 1 MiB: {note.detail}"
    if note.kind == Noted.ONLY:
        return only(list(note.names))
    counts = (*note.counts, 0.0, 0.0, 0.0)  # a hand-edited report's may be short
    if note.kind == Noted.GPU_SKIPPED:
        return gpu_skipped(int(counts[0]))
    if note.kind == Noted.GPU_RAN:
        return gpu_ran(note.detail, int(counts[0]), int(counts[1]), counts[2])
    if note.kind == Noted.HIDDEN_PASSED:
        return f"Hidden checks passed (details are withheld): {', '.join(note.names)}."
    return note.detail  # LATE and WORDED: in words already


def raised(error: str, message: str) -> str:
    """An exception the submission's code raised (grader.sandbox.host.StudentError: its type's name, its message)."""
    return f"your code raised {error}: {message}"


def missing_file(path: str) -> str:
    """A check's outcome where the submission has no file for its component (grader.suite.plugin)."""
    return f"{path} is missing: nothing to import"


def not_attempted(error: str, message: str) -> str:
    """A check's outcome where the component is still the stub (it raised NotImplementedError, say)."""
    return f"not attempted ({error}: {message})"


def unusable(error: BaseException) -> str:
    """A check's outcome where the check itself failed on what the submission's code returned."""
    return f"the check could not use what the code returned ({type(error).__name__}: {error})"


def gpu_skipped(checks: int) -> str:
    """The report's note where --device cuda finds no CUDA device (grader.measured.Gpu.note)."""
    return f"GPU checks skipped ({checks}): no CUDA device here; not run and not counted."


def gpu_ran(device: str, passed: int, checks: int, seconds: float) -> str:
    """The report's note on the GPU tier where it ran (grader.measured.Gpu.note)."""
    return f"GPU checks on {device}: {passed} of {checks} passed, in {seconds:g} s."


def only(ordered: list[str]) -> str:
    """The report's note on a grading narrowed to some checks (`grade --only`, grader.grading.only):
    its score is no grade."""
    one = len(ordered) == 1
    return (f"--only: {len(ordered)} check{'' if one else 's'} run ({', '.join(ordered)}); the score counts "
            f"{'it' if one else 'them'} alone and is not the assignment's grade.")


def no_check(option: str, assignment: str, name: str, close: list[str], prefixes: list[str]) -> str:
    """The one-line error for a check id `assignment` does not have (--only, --repro): the ids `close`
    to it, else the `prefixes` its checks start with, to show what exists."""
    hint = f"closest: {', '.join(close)}" if close else f"its checks start with {', '.join(prefixes)}"
    return f"{option}: {assignment} has no check {name!r}; {hint}"


def what(found: Diagnosis) -> str:
    """The bug a diagnosis names, without the code to write: the table's words for a bug of the table, what
    the values, the parameter names or the line show for the others."""
    if found.kind == Found.LOOKS_LIKE:
        return f"{found.subject} looks like {found.looks_like}"
    if found.kind == Found.NAMES and found.names == "layers":
        return (f"{found.component}'s layers look like one module repeated ([layer] * n): only layers.0 has "
                "parameters; build each layer with its own call")
    if found.kind == Found.NAMES and found.names == "no_gradient":
        return (f"{found.component}'s {', '.join(found.modules)} gets no gradient: "
                "it looks unused in forward, or its output is cut from the result (.detach(), torch.no_grad())")
    if found.kind == Found.NAMES:
        return (f"{found.component} looks like {', '.join(found.modules)} "
                "built with bias=False: the docstring asks for a bias")
    if found.kind == Found.PLACEMENT:
        return (f"{found.component} makes a tensor on the CPU at {found.where} ({found.function}: "
                f"{found.line}) where its inputs' device is expected")
    return found.what


def fix(found: Diagnosis) -> str:
    """What the diagnosed code should be, in the table's words (or, a placement, where to make the tensor)."""
    return "make it on the input's device" if found.kind == Found.PLACEMENT else found.fix


def message(found: Diagnosis) -> str:
    """The diagnosis in one sentence, the JSON's "message" at "fix": the bug, the checks it explains, the fix."""
    said, to = what(found), fix(found)
    if found.kind == Found.TABLE:
        n = len(found.explains) or 1
        said = f"matches {said} on all {n} failing public check{'s' * (n > 1)}" if said else ""
        return f"{said}: {to}." if to else f"{said}." * bool(said)
    if found.kind == Found.PLACEMENT:
        return f"{said}: {to} (in {found.check})."
    return f"{said} (in {found.check})."


def worded(found: Diagnosis | None) -> dict | None:
    """A diagnosis (grader.findings.Diagnosis) as the JSON carries it: its data with its words beside."""
    if found is None:
        return None
    return {**found.to_json(), "what": what(found), "fix": fix(found), "message": message(found)}


def failing_checks(n: int) -> str:
    """'the one failing public check', 'both failing public checks', 'all 3 failing public checks'."""
    if n == 1:
        return "the one failing public check"
    return "both failing public checks" if n == 2 else f"all {n} failing public checks"


def diagnosis(found: Diagnosis | None, reveal: Reveal | str = Reveal.FIX) -> str:
    """The diagnosis as course.toml [feedback] reveal allows: "fix" names the bug and the code it should
    be ("should be: ..."), "bug" the bug alone, "check" nothing (""). `found`: grader.judging.diagnosis's,
    completed by grader.judging.telling (`explains`, `expression`)."""
    if found is None or Reveal(reveal) is Reveal.CHECK:
        return ""
    said, to = what(found), fix(found)
    if not said:  # a student form's diagnosis at "check" names nothing
        return ""
    if found.kind == Found.TABLE:  # it explains every failing public check
        said = f"matches {said} on {failing_checks(len(found.explains) or 1)}."
    else:  # forensics or placement: what the values or the line show, in the check named
        checks = f" (in {', '.join(found.explains)})" if found.explains else ""
        said = f"{said}{checks}."
    # a one-line bug: the whole expression to put in place of the bug's (grader.authoring.fixes); else the table's words
    to = found.expression or to
    return said + (f" Should be: {to}." if to and Reveal(reveal) is Reveal.FIX else "")


def sentence(found: Diagnosis | None, reveal: Reveal | str = Reveal.FIX, student: bool = False) -> str:
    """The diagnosis's one sentence as a report's JSON says it (its "message"), for a view that shows that
    sentence (a notebook's cell): the instructor's copy says all of it, a student's copy what [feedback]
    reveal allows (`shown`)."""
    level = Reveal(reveal) if student else Reveal.FIX
    if found is None or level is Reveal.CHECK:
        return ""
    return message(found) if level is Reveal.FIX else diagnosis(found, Reveal.BUG)


def shown(found: Diagnosis | None, reveal: Reveal | str = Reveal.FIX) -> dict | None:
    """The diagnosis in a student's copy of a report's JSON at the level `reveal`, with its words (`worded`):
    all of it ("fix"), without the code to write ("bug": no "fix", "line" or "expression", its message the
    bug alone), none ("check")."""
    if found is None or Reveal(reveal) is Reveal.CHECK:
        return None
    if Reveal(reveal) is Reveal.FIX:
        return worded(found)
    kept = {k: v for k, v in (worded(found) or {}).items() if k not in ("fix", "line", "expression")}
    return {**kept, "message": sentence(found, reveal, student=True)}


def note(found: Attribution | None) -> str:
    """A composite's check's Attribution (grader.judging.scoring) in words: its panel's "parts", the JSON's "note"."""
    if found is None:
        return ""
    names, one = " and ".join(found.parts), len(found.parts) == 1
    if found.kind == Attributed.WAITING:
        return (f"waiting: your {names} fail{'s' * one} {'its' if one else 'their'} own checks, and this check runs "
                f"through {'it' if one else 'them'}: its points count for now, and once "
                f"{'it passes' if one else 'they pass'} it is graded again here (still failing, it then loses them)")
    if found.kind == Attributed.PARTS_FIRST:
        return f"your {names} also fail{'s' * one} their own checks: fix {names} first, then look here"
    if found.kind == Attributed.EXCUSED:
        return (f"not counted here: with the reference's {names} in place of yours this check passes, "
                f"so the difference comes from your {names} (charged there)")
    if found.kind == Attributed.HIDDEN:
        return (f"passes with your {names} only because their bug hides one of this component's own: with "
                f"the reference's {names} it fails as shown")
    if found.kind == Attributed.TOLD:
        return (f"counted: this check passes with the reference's {names}, and with your own {names} reached the "
                f"way the reference's are, but fails when your code calls {'it' if one else 'them'} directly: it "
                f"depends on how {'its part is' if one else 'its parts are'} reached, not on what "
                f"{'it computes' if one else 'they compute'}")
    if found.kind == Attributed.UNEXPLAINED:
        return (f"counted: this check passes with the reference's {names}, but the reference's own code given "
                f"your {names} does not fail it this way, so {'its' if one else 'their'} bug does not explain "
                f"this failure: look in this component's own code")
    return f"counted: this check fails with the reference's {names} too, so this component has a bug of its own"


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


def also(same: list[str], rest: list[str], hidden: list[str], *, diagnosed: bool, tight: bool = False,
         afresh: tuple[str, ...] = ()) -> str:
    """The other failed checks: those the diagnosed bug explains counted (`same`), each public one it does
    not explain named (`rest`), those that failed only on the instructor's second set named apart
    (`afresh`: the diagnosis does not read them), the hidden ones (nor those) named, counted where `tight`."""
    n = len(same) + len(rest) + len(afresh) + len(hidden)
    more = " (grade --verbose shows each)." if tight else ". grade --verbose shows each."
    hid = [f"{len(hidden)} hidden"] if tight and hidden else [f"{i} (hidden)" for i in hidden]
    if tight and len(rest) > 2:  # panels share one screen: a few names, else a count
        rest = [f"{len(rest)} public"]
    fresh = [f"on inputs drawn for this grading: {', '.join(afresh)}"] if afresh else []
    if not diagnosed:
        return f"Also failed ({n}): {'; '.join([*([', '.join([*rest, *hid])] if rest or hid else []), *fresh])}{more}"
    said = [f"{len(same)} by the same bug"] if same else []
    said += [f"not explained by it: {', '.join(rest)}"] if rest else []
    said += fresh
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


def _batch(found: Pattern) -> str:
    wrong = list(found.wrong)
    which = f"batch element {wrong[0]}" if len(wrong) == 1 else f"batch elements {_listed(wrong)}"
    return f"only {which} of {found.batch} {'is' if len(wrong) == 1 else 'are'} wrong; the others match."


def _where(kind: str, found: Pattern) -> str:
    """One location kind (grader.pattern.Kind) in words."""
    n = found.positions
    said: dict[str, str] = {  # (a kind read back from JSON is a plain string, equal to its Kind)
        Kind.FIRST_POSITION: "only position 0 (the first) is wrong; the later positions match.",
        Kind.LAST_POSITION: f"only the last position ({n - 1}) is wrong; the earlier ones match.",
        Kind.FROM_POSITION: f"every position from {found.start} on is wrong; the ones before it match.",
        Kind.PADDED_TAIL: "in each batch element the positions from its own point on are wrong ("
                       + ", ".join(f"from {s} in element {i}" for i, s in list((found.starts or {}).items())[:4])
                       + "), the ones before match: the point differs between elements, as padding does.",
        Kind.SOME_POSITIONS: _many("position", list(found.rows), n),
        Kind.ODD_FEATURES: f"only odd feature columns ({_listed(list(found.columns))}) are wrong; "
                        "the even ones match.",
        Kind.EVEN_FEATURES: f"only even feature columns ({_listed(list(found.columns))}) are wrong; "
                         "the odd ones match.",
        Kind.SOME_FEATURES: _many("feature column", list(found.columns), found.features),
        Kind.DIAGONAL: "only the diagonal is wrong (row i, column i: a position and itself); the rest matches.",
        Kind.ABOVE_DIAGONAL: "only entries above the diagonal are wrong (column j after row i: a later key); "
                          "the diagonal and below match.",
        Kind.BELOW_DIAGONAL: "only entries below the diagonal are wrong (column j before row i: an earlier key); "
                          "the diagonal and above match.",
    }
    return said.get(kind, "")


def _form(kind: str, found: Pattern) -> str:
    """The error's form (grader.pattern.FORMS) in words."""
    said: dict[str, str] = {
        Kind.OFFSET: f"every value is off by the same amount ({found.offset or 0:.4g}).",
        Kind.FEATURE_OFFSET: "each feature column is off by its own constant amount (got - expected: "
                          f"{_listed(list(found.offsets), 4)}).",
        Kind.SCALE: f"every value is the expected times the same factor ({found.scale or 0:.4g}).",
        Kind.FEATURE_SCALE: "each feature column is the expected times its own factor ("
                         f"{_listed(list(found.scales), 4)}).",
    }
    return said.get(kind, "")


def _kinds(found: Pattern) -> list[str]:
    # a pattern written before the kinds found only some batch elements wrong
    return [str(k) for k in found.kinds] if found.kinds is not None else [Kind.SOME_BATCH] if found.wrong else []


def pattern(found: Pattern) -> str:
    """What a check found wrong (grader.pattern's data: the kinds and what they need), and where the
    check's likely causes do not fit it, that it rules them out."""
    kinds = _kinds(found)
    said = [_batch(found)] if Kind.SOME_BATCH in kinds else []
    said += [s for s in (_where(k, found) for k in kinds) if s][:1]
    said += [s for s in (_form(k, found) for k in kinds) if s][:1]
    if not said:
        said = ["every element is wrong." if Kind.EVERYWHERE in kinds else "some elements are wrong, in no "
                "pattern of batch elements, positions or feature columns."]
    text = " ".join(s[0].upper() + s[1:] if i else s for i, s in enumerate(said))
    if found.alike and Kind.SOME_BATCH in kinds:
        text += (" So the cause is not one that changes every batch element alike, as this check's usual causes "
                 "would: look at what differs between them (their padding, their mask).")
    elif not fits(kinds, list(found.fits)):
        text += " This check's usual causes would not give this pattern: look at what differs where it is wrong."
    return text


def drawn(value: str) -> str:
    """The set of inputs a failure was found on (Details.drawn, grader.suite.draws)."""
    if value == "afresh":  # grader.results.Drawn.AFRESH (grader.results imports this module)
        return ("drawn afresh for this grading, not shown: the check passed on the inputs your own run draws, "
                "and must hold on any")
    return str(value)


def hint_fits(pattern: Pattern | None) -> bool:
    """Whether a check's hint (its likely causes) fits what failed: the kinds its causes declare
    explain the pattern found (grader.pattern.fits); a hint that declares none fits everything."""
    if pattern is None:
        return True
    if pattern.kinds is None:  # a pattern of before the kinds: only some batch elements, causes alike or not
        return not pattern.alike
    return fits(list(pattern.kinds), list(pattern.fits))


def judged(pattern: Pattern | None) -> bool:
    """False where a check's hint declares the patterns its causes explain but what failed shows none
    to judge them by (a single element): grader.judging.telling prefers a check that can tell."""
    return pattern is None or not (pattern.fits and pattern.kinds is not None and not pattern.kinds)


def pattern_shown(pattern: Pattern | None, tight: bool = False) -> bool:
    """Whether a panel words the pattern: where the hint's causes do not fit it (it stands in for
    them), where only some batch elements are wrong, and (but where several panels share one
    screen: `tight`) where it found more than "everywhere" or "in no form"."""
    if pattern is None:
        return False
    kinds = set(_kinds(pattern))
    if not hint_fits(pattern) or Kind.SOME_BATCH in kinds:
        return True
    return not tight and bool(kinds - {Kind.EVERYWHERE, Kind.SCATTERED})
