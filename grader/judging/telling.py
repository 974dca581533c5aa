"""The most telling check: of a component's failing checks, the one whose failure says most about the bug.

The course's table of classic bugs (grader.judging.diagnosis: `bugs.json`, what each bug makes its
component's public checks say) tells which checks each bug fails. A failing check is ranked by

1. how much its hint names the bugs that fail it (a diagnosed component: its bug alone): the word
   pairs of each bug's sentence ("heads split with view(B, h, T, d_k) without the transpose")
   found in the hint, summed (a hint that says "not view(B, n_heads, T, d_k)" names that bug; one
   that gives the recipe "view(B, T, h, d_k).transpose(1, 2)" much less);
2. how few of the component's bugs fail it (a check every bug fails says little), where the
   component is not diagnosed; diagnosed, how many (its name then suggests no other bug);
3. a wrong value over an exception or a timeout (placed first, before 1.), a hint that fits
   the pattern of what failed over one that does not, then the smallest example.

A public check comes before a hidden one: its example is the student's to run; a check that
compares with values built from the student's own output (details "basis") comes after every
check compared with a correct implementation's values.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from grader import words
from grader.findings import Diagnosis, Found
from grader.results import NOT_COUNTED, CheckResult, ComponentResult, Drawn, Reason, Status, Tier
from grader.words import hint_fits, judged

_WORD = re.compile(r"[a-z0-9_]+")
# pairs of these alone ("with the", "of the") name nothing
_STOP = frozenset("a an and as at be by for from in is it its of on or the their then to with".split())


def pairs(text: str) -> set[tuple[str, str]]:
    """Consecutive word pairs of `text`, lower case, code split at punctuation: view(B, h -> (view, b), (b, h)."""
    words = _WORD.findall(text.lower())
    return {(a, b) for a, b in zip(words, words[1:], strict=False) if not (a in _STOP and b in _STOP)}


def shown(component: ComponentResult) -> list[CheckResult]:
    """The failures the report charges here: not excused by the parts, not waiting for them."""
    return [t for t in component.checks if t.outcome.status != Status.PASSED and t.outcome.reason not in NOT_COUNTED
            and not t.excused_by and not t.waiting_on]


def _stems(text: str) -> set[str]:
    return {w[:4] for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP}


def topical(check: CheckResult, about: str = "", component: str = "") -> int:
    """How many words of the check's name (cut to 4 letters: "names" is "named"; the component's own
    left out) `about` speaks of: the diagnosed bug where there is one, else the failure's message. A
    padding bug is better shown by greedy_decode_stops_at_eos_and_pads_after than by ..._runs_in_eval_mode.
    The hint is not read: it speaks of its own check's subject whatever failed."""
    own = _stems(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", component))
    return len((_stems(check.id) - own) & _stems(about or check.outcome.message))


def rank(check: CheckResult, bugs: dict[str, dict], suspects: dict[str, dict] | None = None,
         context: tuple[str, str, frozenset[str]] = ("", "", frozenset())) -> tuple:
    """The sort key of `check` among its component's failures (smallest first). `bugs`: the table's
    entries of the component (name -> {"message", "failing", ...}); `suspects`: those the failures
    may come from (a diagnosed component: its bug alone; default: those that fail the check)."""
    o = check.outcome
    hint = pairs(str(o.details.hint))
    failing = [bug for bug in bugs.values() if check.id in bug.get("failing", {})]
    suspected = failing if suspects is None else [bug for bug in suspects.values() if bug in failing]
    named = sum(len(pairs(bug.get("message", "")) & hint) for bug in suspected)
    # a check whose comparison is built from the student's own output ("basis") tells less than one with a
    # correct implementation's values: never the panel while such a one failed
    # a wrong value says more than an exception (in a check about something else: a device, dropout); a
    # hint whose causes do not fit the pattern of what failed (grader.words.hint_fits) tells less, and
    # one whose fit a single wrong element cannot judge (words.judged) less than one that fits
    # a failure on the student's own draws is one their run shows too: before one on the instructor's second set
    return (check.tier == Tier.HIDDEN, bool(o.details.basis), o.reason != Reason.MISMATCH,
            o.details.drawn == Drawn.AFRESH,
            2 * (not hint_fits(o.details.pattern)) or int(not judged(o.details.pattern)),
            o.message in context[2], -named,
            -topical(check, context[0], context[1]),
            # undiagnosed: the check fewest bugs fail locates best; diagnosed, the bug is named, and a check
            # that many bugs fail (matches_torch) does not suggest another one by its name (dropout, .to())
            len(failing) if suspects is None else -len(failing),
            # the smallest panel: its example, and an exception's traceback
            (len(o.details.example) or 1 << 20) + len(o.details.where))


def completed(diagnosis: Diagnosis | None, table: dict[str, dict]) -> Diagnosis | None:
    """`diagnosis` (grader.judging.diagnosis's) with the data a report words it from (the level of
    course.toml [feedback] picks what it says), where it has none yet: `what` (the bug, without the code
    to write), `fix` (the code it should be) and `expression` for a bug of the table, `explains` (the
    public checks the diagnosis accounts for: all of a table bug's, the one check of a "looks like")."""
    if diagnosis is None:
        return None
    entry = table.get(diagnosis.bug)
    if entry is not None:
        return replace(diagnosis, what=diagnosis.what or str(entry.get("message") or ""),
                       fix=diagnosis.fix or str(entry.get("fix") or ""),
                       # a one-line bug's complete fix (grader.authoring.fixes)
                       expression=diagnosis.expression or str(entry.get("expression") or ""),
                       explains=diagnosis.explains or tuple(sorted(entry.get("failing", {}))))
    if diagnosis.kind in (Found.LOOKS_LIKE, Found.NAMES):  # seen in one check (a placement: in all)
        return replace(diagnosis, explains=diagnosis.explains or (diagnosis.check,))
    return diagnosis


def most_telling(component: ComponentResult, table: dict[str, dict]) -> CheckResult | None:
    """The failure to show in full for `component`; `table`: grader.judging.diagnosis.load's bug table. Its
    diagnosis is completed first (`completed`): grading asks this once per component, after diagnosing."""
    component.diagnosis = completed(component.diagnosis, table)
    return best(component, table)


def best(component: ComponentResult, table: dict[str, dict]) -> CheckResult | None:
    """The failure to show in full for `component`, as it stands: the one ranking (`rank`), which the
    renderers ask too where grading chose none (a report scored alone, or its JSON without "telling":
    `table` is then {})."""
    failed = shown(component)
    if not failed:
        return None
    bugs = {name: bug for name, bug in table.items() if bug.get("component") == component.name}
    diagnosed = component.diagnosis.bug if component.diagnosis else None
    suspects = {diagnosed: bugs[diagnosed]} if diagnosed in bugs else None
    # the same message from several checks is one failure seen through them (a load that found no such
    # parameter): a check with a failure of its own tells more; the diagnosed bug says which is on topic
    said = Counter(t.outcome.message for t in failed if t.tier != Tier.HIDDEN)  # (hidden ones repeat the public)
    what = words.what(component.diagnosis) if component.diagnosis else ""
    context = (what, component.name, frozenset() if what else frozenset(m for m, n in said.items() if n > 1))
    return min(failed, key=lambda t: rank(t, bugs, suspects, context))
