"""Findings as data: what judging (grader.judging) learns, and what a check records beside its message that
judging reads (Frame, Parameters: grader.results.Details), as enums and frozen dataclasses, never as
sentences. grader.words words them, for the terminal report, the JSON's text fields and the
batch's outputs alike; nothing reads a sentence back. Standard library only, as grader.results."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import NamedTuple


class Found(StrEnum):
    """What a diagnosis (grader.judging.diagnosis; a Diagnosis's `kind`) found; its other fields are data
    that grader.words words. A diagnosis without a kind (a report written before the kinds) is read as
    the table's."""

    TABLE = "table"  # a classic bug of the course's table: "bug" its name, "what" and "fix" the table's
    LOOKS_LIKE = "looks_like"  # forensics: in "check", "subject"'s got values look like "looks_like"
    # a check of parameter names: "layers" (one module repeated) or "unbiased" (modules without bias); or of
    # gradients: "no_gradient" (a module whose parameter got none)
    NAMES = "names"
    PLACEMENT = "placement"  # "component" makes a tensor on the CPU at "where" ("function": "line")


class Attributed(StrEnum):
    """What attribution (grader.judging.attribution) learned of a composite's check whose parts fail, as
    scoring (grader.judging.scoring) decides it; grader.words.note words it."""

    WAITING = "waiting"  # no reference: failing, uncharged until the parts pass (the parts: `waiting_on`)
    PARTS_FIRST = "parts_first"  # no reference: passing or not attempted, with failing parts to fix first
    EXCUSED = "excused"  # passes with the reference's parts: the parts are charged (the parts: `excused_by`)
    HIDDEN = "hidden"  # passes with the student's parts only because their bug hides one of its own
    OWN = "own"  # fails with the reference's parts too: the component's own bug
    # passes with the reference's parts, and with its own reached as those are (a round trip each): it behaves
    # by how its parts are reached, not by what they compute, so nothing is excused
    TOLD = "told"
    # passes with the reference's parts, but the reference's composite fed the submission's parts does not
    # fail this way (grader.suite.fed): the parts do not explain the failure, so nothing is excused
    UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class Diagnosis:
    """What names a component's bug (grader.judging.diagnosis), with what grader.judging.telling completes it
    with; grader.words words it. A kind has the fields of _FIELDS; the others stay empty."""

    kind: Found
    bug: str  # the table's name of the bug; a forensic finding's own id ("looks_like:<check>", "placement:<check>")
    check: str = ""  # the forensic kinds': the failing check it was seen in, which the report names
    component: str = ""  # NAMES and PLACEMENT: their words name the component, not the check
    # TABLE: the table's own words, for a report that names the bug without the code to write (course.toml
    # [feedback] reveal = "bug"): "what" the bug alone, "fix" the code; a student form of the table holds only
    # what its level shows (none of them at "check"). The other kinds' what and fix are words, made from the rest
    what: str = ""
    fix: str = ""
    subject: str = ""  # LOOKS_LIKE: what was compared, as the check named it (a check that names none: its message)
    looks_like: str = ""  # LOOKS_LIKE: the failing values as a simple function of the expected (grader.suite.forensics)
    names: str = ""  # NAMES: "layers" (one module repeated), "unbiased" (modules without bias) or "no_gradient"
    modules: tuple[str, ...] = ()  # NAMES: the modules without bias, or the one whose parameter got no gradient
    # PLACEMENT: the line of the component's own code that made a tensor on the CPU: "file:line", its function,
    # its code (a student's copy at reveal "bug" leaves the code out: grader.words.shown)
    where: str = ""
    function: str = ""
    line: str = ""
    # the public checks it accounts for (grader.judging.telling.completed): all of a table bug's, a LOOKS_LIKE's or
    # a NAMES's one check; the report names the other failures apart. Empty: not completed
    explains: tuple[str, ...] = ()
    expression: str = ""  # TABLE, a one-line bug: the whole expression in place of the bug's (grader.authoring.fixes)

    def to_json(self) -> dict:
        """The data, as a report's JSON holds it beside its words (grader.words.worded): its kind's fields, those
        that completion adds (_SET_ONLY) where set, in the order of the fields."""
        data: dict = {"kind": str(self.kind), "bug": self.bug}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _FIELDS[self.kind] and (value or f.name not in _SET_ONLY):
                data[f.name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: object) -> Diagnosis | None:
        """A report's JSON "diagnosis" read back; None where it holds none. Its words (its "message", a forensic
        kind's "what" and "fix") are left: grader.words words the data again. One without "kind" (a report
        written before the kinds) is the table's; a field of another kind is not read."""
        if not isinstance(data, dict) or not data:
            return None
        found: dict = data
        kind = Found(found["kind"]) if found.get("kind") in set(Found) else Found.TABLE

        def text(key: str) -> str:
            return str(found.get(key) or "") if key in _FIELDS[kind] else ""

        def listed(key: str) -> tuple[str, ...]:
            value = found.get(key)
            return tuple(str(v) for v in value) if key in _FIELDS[kind] and isinstance(value, list | tuple) else ()

        return cls(kind, str(found.get("bug") or ""), check=text("check"), component=text("component"),
                   what=text("what"), fix=text("fix"), subject=text("subject"), looks_like=text("looks_like"),
                   names=text("names"), modules=listed("modules"), where=text("where"), function=text("function"),
                   line=text("line"), explains=listed("explains"), expression=text("expression"))


# the fields each kind has (Found), besides kind and bug: what grader.judging.diagnosis finds and telling adds
_FIELDS: dict[Found, frozenset[str]] = {
    Found.TABLE: frozenset({"what", "fix", "explains", "expression"}),
    Found.LOOKS_LIKE: frozenset({"check", "subject", "looks_like", "explains"}),
    Found.NAMES: frozenset({"check", "component", "names", "modules", "explains"}),
    Found.PLACEMENT: frozenset({"check", "component", "where", "function", "line", "explains"}),
}
# written only where set, as a diagnosis has them today: what completion adds, the modules of a NAMES that has
# some ("layers" names none)
_SET_ONLY = frozenset({"explains", "expression", "modules"})


@dataclass(frozen=True)
class Attribution:
    """A finding of scoring on one check of a composite: which case (`kind`) and the parts it names."""

    kind: Attributed
    parts: tuple[str, ...]

    def to_json(self) -> dict:
        return {"kind": str(self.kind), "parts": list(self.parts)}

    @classmethod
    def from_json(cls, data: object) -> Attribution | None:
        """None where `data` is not one (a report written before attributions were data)."""
        if not isinstance(data, dict) or data.get("kind") not in set(Attributed):
            return None
        return cls(Attributed(data["kind"]), tuple(str(p) for p in data.get("parts", ())))


class Evasion(StrEnum):
    """A tool of evasion that grader.judging.forbidden flags where it names no API (the others are flagged
    by their names: "vars()", "__dict__"); the value is what the report and the JSON's "what" say."""

    FRAMES = "frame inspection"
    COMPUTED_GETATTR = "getattr with a computed name"
    # the devices the placement check runs a forward on (meta, and the worker's second device, lazy): code
    # that tests for them can behave right there alone (grader.sandbox.child.placement.watch)
    DEVICE_TELL = "a test for the placement check's devices (meta, lazy)"


class Seen(StrEnum):
    """How grader.judging.forbidden saw a Sighting: in the staged source, or in the worker's record of a run."""

    SOURCE = "source"
    EXECUTED = "executed"


@dataclass(frozen=True)
class Sighting:
    """What grader.judging.forbidden saw in a component's code: a forbidden API (a hit, which scores it 0) or
    a tool that could hide one (a flag); `what` is the course's name of the API or the tool (an Evasion's
    words), `where` "assignment1/layer_norm.py:7". The submission's text: made inert where it is shown."""

    what: str
    where: str
    how: Seen

    def to_json(self) -> dict:
        return {"what": self.what, "where": self.where, "how": str(self.how)}

    @classmethod
    def from_json(cls, data: object) -> Sighting | None:
        """None where `data` is not one (a document written by hand, or damaged)."""
        if not isinstance(data, dict) or data.get("how") not in set(Seen):
            return None
        return cls(str(data.get("what", "")), str(data.get("where", "")), Seen(data["how"]))


class Noted(StrEnum):
    """What one of a report's notes tells (Report.notes, a Note each); grader.words.noted words
    it: the JSON's "noted" holds the data, its "notes" the words."""

    PUBLIC_ONLY = "public_only"  # a student's copy: the hidden checks are the instructor's to run
    RESTARTED = "restarted"  # the submission's process was restarted; detail: why (grader.results.Fault)
    NOT_STAGED = "not_staged"  # a file left out, not a regular file under 1 MiB; detail: its path
    ONLY = "only"  # a grading narrowed by `grade --only`; names: the checks it ran
    GPU_SKIPPED = "gpu_skipped"  # --device cuda with no CUDA device here; counts: (the GPU checks,)
    GPU_RAN = "gpu_ran"  # the GPU tier ran; detail: the device; counts: (passed, checks, seconds)
    HIDDEN_PASSED = "hidden_passed"  # a batch's feedback withholds passed hidden checks; names: those checks
    LATE = "late"  # a batch's late penalty; detail: its words (grader.batch.late.note_of)
    WORDED = "worded"  # a note of a report written before notes were data; detail: its words


@dataclass(frozen=True)
class Note:
    """One of a report's notes on what was graded, as data."""

    kind: Noted
    detail: str = ""
    names: tuple[str, ...] = ()
    counts: tuple[float, ...] = ()

    def to_json(self) -> dict:
        return {"kind": str(self.kind), "detail": self.detail, "names": list(self.names), "counts": list(self.counts)}

    @classmethod
    def from_json(cls, data: object) -> Note:
        """A note of the JSON's "noted"; a string (a note of "notes", from a report without "noted") is WORDED."""
        if not isinstance(data, dict) or data.get("kind") not in set(Noted):
            return cls(Noted.WORDED, str(data))
        return cls(Noted(data["kind"]), str(data.get("detail", "")), tuple(str(n) for n in data.get("names", ())),
                   tuple(float(c) for c in data.get("counts", ()) if isinstance(c, int | float)))


class Frame(NamedTuple):
    """A frame of the submission's code, as a check records it: file (relative to the submission), line,
    function, the line's code."""

    file: str
    line: int
    function: str
    code: str

    @classmethod
    def from_json(cls, data: object) -> Frame | None:
        """None where `data` is not one: a file and a function named, a line number, the code as text."""
        if not isinstance(data, dict) or type(data.get("line")) is not int or not all(
                isinstance(data.get(k), str) and data[k] for k in ("file", "function")) \
                or not isinstance(data.get("code"), str):
            return None
        return cls(data["file"], data["line"], data["function"], data["code"])


@dataclass(frozen=True)
class Parameters:
    """A names check's parameter names as its `got` lists them (missing, unexpected, of the wrong shape), or a
    gradient check's that got no gradient at all."""

    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    wrong_shape: tuple[str, ...] = ()
    no_gradient: tuple[str, ...] = ()

    def to_json(self) -> dict:
        # a names check's lists are written all three, as its `got` says each ("none" for an empty one)
        names = {} if self.no_gradient and not (self.missing or self.unexpected or self.wrong_shape) else {
            "missing": list(self.missing), "unexpected": list(self.unexpected), "wrong_shape": list(self.wrong_shape)}
        return {**names, **({"no_gradient": list(self.no_gradient)} if self.no_gradient else {})}

    @classmethod
    def from_json(cls, data: object) -> Parameters | None:
        """None where `data` is not a table of lists of names."""
        if not isinstance(data, dict) or not data or set(data) - {f.name for f in fields(cls)} or not all(
                isinstance(v, list) and all(isinstance(n, str) for n in v) for v in data.values()):
            return None
        return cls(**{k: tuple(v) for k, v in data.items()})
