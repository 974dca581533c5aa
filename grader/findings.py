"""Findings as data: what judging (grader.judging) learns, as enums and frozen dataclasses, never as
sentences. grader.words words them, for the terminal report, the JSON's text fields and the
batch's outputs alike; nothing reads a sentence back. Standard library only, as grader.results."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Found(StrEnum):
    """What a diagnosis (grader.judging.diagnosis; ComponentResult.diagnosis's "kind") found; its other
    fields are data that grader.words words. A diagnosis without a kind (a report written before
    the kinds) is read as the table's."""

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
