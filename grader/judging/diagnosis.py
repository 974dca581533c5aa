"""Naming the bug: a failing component's public checks against what each classic bug makes them say.

The course's table of classic bugs (`<suites>/bugs.py`, instructors' material: each bug is the
reference with one change) is graded once by `grade expected`, which stores, per bug, what the
failing public checks of its component report: status, message, expected and got, and the
(shrunk) example. Outputs, never code: `<suites>/public/expected/bugs.json` ships to students.

Grading is deterministic (Hypothesis derandomized, the same inputs drawn for the same answers), so
code that computes what a bug computes fails the same checks on the same shrunk examples with the
same values. A component is diagnosed when exactly one bug of its table explains every one of its
failing public checks, and no other: a partial match, or two bugs that match, is no diagnosis.
Numbers are compared to 4 significant digits (the same bug written another way rounds alike), and a
zero is 0 whatever its sign (-0.0 == 0.0: the same value, reached another way).

A component no entry explains gets its numerical forensics instead ("looks like": the failing
values as a simple function of the expected ones, grader.suite.forensics), only where every part it
is built on passes here: a part's bug would otherwise be said on its composite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grader.course import Assignment, Course
from grader.findings import Diagnosis, Found, Frame
from grader.results import Drawn, Outcome, Reason, Status, Tier
from grader.reveal import Reveal

KEYS = ("status", "reason", "message", "expected", "got", "example")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")
# a zero written with its sign ("-0", "-0.0", "-0e+00"), not a digit of a longer number or word
_NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0(?:\.0+)?(?:e[-+]?\d+)?(?![\w.])")


def path_for(course: Course) -> Path:
    return course.suites / Tier.PUBLIC / "expected" / "bugs.json"


def signature(outcome: Outcome) -> dict[str, str]:
    """What a failed check says, numbers rounded: equal for the same bug however it is written."""
    said = {"status": outcome.status, "reason": outcome.reason, "message": outcome.message, **outcome.details.shown()}
    return {k: _NUMBER.sub(lambda m: f"{float(m.group()):.4g}", str(said[k])) for k in KEYS if k in said}


def alike(said: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Signatures (check id -> signature) as a failure and a bug of the table are matched: each zero
    without its sign. -0.0 and 0.0 are the same number (IEEE 754: -0.0 == 0.0); which of them a float
    computation prints tells only which way it got there (a negative value times a dropped-out 0), not
    what it computes, so the same bug written another way may print either. bugs.json is a file the
    student's kit holds and may be edited: a value not shaped as a signature is passed through unchanged."""
    if not isinstance(said, dict):
        return said
    return {check: {k: _NEGATIVE_ZERO.sub(lambda m: m.group()[1:], v) if isinstance(v, str) else v
                    for k, v in sig.items()} if isinstance(sig, dict) else sig for check, sig in said.items()}


def failing_public(spec: Assignment, component: str, results: dict[str, Outcome]) -> dict[str, dict[str, str]]:
    """check id -> signature, for the component's public checks that did not pass on the student's own
    draws (the table is of those: a failure on the instructor's second set alone is not one of its
    signatures, grader.suite.draws)."""
    comp = next(c for c in spec.components if c.name == component)
    return {chk.id: signature(results[chk.id]) for chk in comp.checks
            if chk.tier == Tier.PUBLIC and chk.id in results and results[chk.id].status != Status.PASSED
            and results[chk.id].details.drawn != Drawn.AFRESH}


# the order of the levels, least told first: a student form of the table holds what its level shows
LEVELS = (Reveal.CHECK, Reveal.BUG, Reveal.FIX)


def load(course: Course) -> dict[str, dict]:
    """The bug table: the instructors' (`grade expected`), or a student kit's form of it (`student_form`)."""
    path = path_for(course)
    data = json.loads(path.read_text()) if path.is_file() else {}
    return data["bugs"] if _is_student_form(data) else data


def shipped_level(course: Course) -> Reveal:
    """The level of [feedback] reveal that the course's bug table was written for: a student form's own
    (the instructor's, baked in by `grade release` or `grade nbgrader`); the instructors' table holds all."""
    path = path_for(course)
    data = json.loads(path.read_text()) if path.is_file() else {}
    return Reveal(data["reveal"]) if _is_student_form(data) else Reveal.FIX


def told(course: Course) -> Reveal:
    """What a report tells of a diagnosis: the course's [feedback] reveal, never past what its table
    holds (a student who edits their course.toml's "check" into "fix" has no fix to be shown)."""
    level = getattr(course, "reveal", Reveal.FIX)
    return min(level, shipped_level(course), key=LEVELS.index)


def _is_student_form(data: dict) -> bool:
    return set(data) == {"reveal", "bugs"} and isinstance(data["reveal"], str)


def student_form(table: dict[str, dict], reveal: Reveal) -> dict:
    """The table as a student kit ships it at the instructor's level `reveal`: each bug's component and
    the signatures that name it (what its public checks say, which the student's own run shows too),
    with its message ("bug" and "fix") and its fix ("fix") only where the level shows them. At "check"
    the bugs' names, which say what each is, become numbers. The data a test of --repro reads stays home."""
    kept = {"bug": ("message",), "fix": ("message", "fix")}.get(Reveal(reveal), ())
    bugs = {}
    for n, name in enumerate(sorted(table), start=1):
        entry = table[name]
        key = name if Reveal(reveal) is not Reveal.CHECK else f"bug{n:03d}"
        bugs[key] = {"component": entry["component"], "failing": entry["failing"],
                     **{k: entry[k] for k in kept if k in entry}}
    return {"reveal": str(Reveal(reveal)), "bugs": bugs}


def student_text(table: dict[str, dict], reveal: Reveal) -> str:
    return json.dumps(student_form(table, reveal), indent=1, sort_keys=True) + "\n"


def diagnose(course: Course, spec: Assignment, results: dict[str, Outcome],
             excused: frozenset[str] = frozenset(), table: dict[str, dict] | None = None,
             upstream: frozenset[str] | None = None) -> dict[str, Diagnosis]:
    """component -> what names its bug (a grader.findings.Diagnosis, worded by grader.words), where one bug
    explains all.

    `excused`: the failed checks that pass with the reference's parts swapped in. A component with
    one of them fails (at least partly) because of a part, and a part's bug can make it say exactly
    what one of its own bugs says (a PositionalEncoding without dropout and a TransformerEmbedding
    that does not pass dropout on fail TransformerEmbedding's checks alike): the part is named, in
    its own component, and the composite is not. `table`: the bug table to match (default: the
    course's bugs.json; {} leaves the forensics alone, as for a bug outside the table). `upstream`: the
    parts of earlier assignments found failing their own checks (grader.judging.attribution); None: not known,
    and a component built on any part of another assignment gets no forensics."""
    table = load(course) if table is None else table
    found = {}
    for comp in spec.components:
        failing = failing_public(spec, comp.name, results)
        attempted = all(s.get("reason") != Reason.NOT_ATTEMPTED for s in failing.values())
        if not failing or not attempted or excused & set(failing):
            continue
        matches = [name for name, bug in table.items()
                   if bug["component"] == comp.name and alike(bug["failing"]) == alike(failing)]
        if len(matches) == 1:
            bug = table[matches[0]]
            # "what" (the bug alone) and "fix" are the table's own fields, for a report that names the bug
            # without the code to write (course.toml [feedback] reveal = "bug"); a student form of the table
            # holds only what its level shows (`student_form`): none of them at "check"
            found[comp.name] = Diagnosis(Found.TABLE, matches[0], what=str(bug.get("message") or ""),
                                         fix=str(bug.get("fix") or ""), explains=tuple(sorted(failing)))
        elif not matches and _own(spec, comp, results, upstream):
            seen = forensic(spec, comp.name, results)
            if seen:
                found[comp.name] = seen
    return found


def _own(spec: Assignment, comp, results: dict[str, Outcome], upstream: frozenset[str] | None) -> bool:
    """Whether a failure of `comp` can only be its own: every part it is built on passes every check,
    here or (a part of an earlier assignment) where attribution ran it: not in `upstream` (a part's bug
    shows in its composites' values too, and its "looks like" would then be said on the wrong component)."""
    parts = {c.name: c for c in spec.components}
    for name in comp.depends:
        part = parts.get(name)
        if part is None:
            if upstream is None or name in upstream:
                return False
            continue
        if not _own(spec, part, results, upstream):
            return False
        if any(chk.id not in results or results[chk.id].status != Status.PASSED for chk in part.checks
               if chk.tier == Tier.PUBLIC):
            return False
    return True


def forensic(spec: Assignment, component: str, results: dict[str, Outcome]) -> Diagnosis | None:
    """The numerical forensics of the component's failing public checks (grader.suite.forensics,
    computed where the check compared tensors): the first failing check, in the component's order,
    whose got values look like a simple function of the expected ones."""
    comp = next(c for c in spec.components if c.name == component)
    for chk in comp.checks:
        o = results.get(chk.id)
        if chk.tier != Tier.PUBLIC or o is None or o.status == Status.PASSED or not _text(o.details.looks_like):
            continue
        # what was compared, as the check named it (the Mismatch's `subject`); a check that names none
        # is said by its whole message
        subject = _text(o.details.subject) or o.message
        return Diagnosis(Found.LOOKS_LIKE, f"looks_like:{chk.id}", check=chk.id, subject=subject,
                         looks_like=_text(o.details.looks_like))
    for chk in comp.checks:
        o = results.get(chk.id)
        seen = _names(o) if chk.tier == Tier.PUBLIC and o is not None and o.status != Status.PASSED else None
        if seen:
            return Diagnosis(Found.NAMES, f"looks_like:{chk.id}", check=chk.id, component=component, names=seen[0],
                             modules=seen[1])
    return placement(spec, comp, results)


def placement(spec: Assignment, comp, results: dict[str, Outcome]) -> Diagnosis | None:
    """Where every failing public check of `comp` is a placement failure (a tensor made on the CPU while
    the inputs were on another device: the device checks record the frames that made it, the Mismatch's
    `made`), the line of the component's own code that made it: the first frame of the chain (the line
    that made it, then its callers) in the component's file, its own function or method first
    (make_causal_mask(T) called without a device is make_tgt_mask's line, not make_causal_mask's)."""
    failing = [results[c.id] for c in comp.checks
               if c.tier == Tier.PUBLIC and c.id in results and results[c.id].status != Status.PASSED]
    chains = [_chain(o) for o in failing]
    if not failing or not all(chains):
        return None
    path = f"{spec.name}/{comp.file}"
    mine = [f for f in chains[0] if f.file == path]
    if not mine:
        return None  # made in another file: a part's line, said there
    f = next((f for f in mine if f.function == comp.name or f.function.startswith(f"{comp.name}.")), mine[0])
    check = next(c.id for c in comp.checks if c.tier == Tier.PUBLIC and c.id in results
                 and results[c.id].status != Status.PASSED)
    return Diagnosis(Found.PLACEMENT, f"placement:{check}", check=check, component=comp.name,
                     where=f"{f.file}:{f.line}", function=f.function, line=f.code)


# What the diagnosis reads of a check's details. They are the grader's checks' own records, but of what
# the worker (the submission's process) sent: frames, parameter names. Read by type, and bounded: a
# subject, a frame's file, function and code of the checks run to a few dozen characters, a chain to 4
# frames (the watch's limit), a names check's listing to 6 names of each kind.
MAX_TEXT, MAX_FRAMES, MAX_NAMES = 1_000, 6, 64


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _chain(outcome: Outcome) -> list[Frame]:
    """The frames that made a stray CPU tensor (the details' `made`), the maker first, then its callers,
    bounded; [] where the failure is not a placement failure."""
    return [Frame(_text(f.file), f.line, _text(f.function), _text(f.code)) for f in outcome.details.made[:MAX_FRAMES]]


def _listed(names: tuple[str, ...]) -> list[str]:
    """Names, bounded."""
    return [n[:MAX_TEXT] for n in names[:MAX_NAMES]]


_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")  # in a parameter's name: the index of a stacked layer


def _names(outcome: Outcome) -> tuple[str, tuple[str, ...]] | None:
    """What a check of the module's parameter names (its details' `parameters`) shows of the parameters
    that are missing, where none is unexpected or of the wrong shape (a NAMES Diagnosis's `names` and
    `modules`): only the first of its stacked layers has any (one module repeated: ("layers", ())), or only
    biases (layers without one: ("unbiased", modules)); or, a gradient check's, the parameter that got no
    gradient at all (its module unused in forward, or cut from the output: ("no_gradient", (module,)))."""
    found = outcome.details.parameters
    if found is None:
        return None
    if found.no_gradient:
        cut = _listed(found.no_gradient)
        if len(cut) != 1 or "." not in cut[0] or found.missing or found.unexpected or found.wrong_shape:
            return None
        return "no_gradient", (cut[0].rpartition(".")[0],)
    missing = _listed(found.missing)
    if not missing or found.unexpected or found.wrong_shape:
        return None
    layers = {m.group(1) for n in missing for m in [_LAYER.search(n)] if m}
    if all(_LAYER.search(n) for n in missing) and "0" not in layers:
        return "layers", ()
    if all(n.endswith(".bias") for n in missing):
        return "unbiased", tuple(n.removesuffix(".bias") for n in missing)
    return None
