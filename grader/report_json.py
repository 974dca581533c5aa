"""A report rebuilt from its JSON (grader.results.to_json's document): to render again what was graded
elsewhere or earlier (a batch's reports, the kit's golden record) without grading it anew; and what a batch
adds to the document (its record, overrides, lateness: `graded`), read here so that no other module reads
a report by its keys (tests/kit/unit/test_unit_typed_reads.py). Standard library only, as grader.results."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from grader.findings import Attribution, Diagnosis, Note, Noted, Sighting
from grader.measured import Gpu, Performance
from grader.results import CheckResult, ComponentResult, Details, Outcome, Reason, Report, Status, Tier
from grader.reveal import Reveal


def from_json(data: dict, *, weights: dict[str, float] | None = None, depends: dict[str, tuple[str, ...]] | None = None,
              title: str = "", student: bool | None = None) -> Report:
    """The Report that `to_json` wrote `data` from, to render again (a batch's, a record's). The JSON
    keeps neither the assignment's title, a check's weight nor a component's parts: `title`, `weights`
    (check id -> weight, default 1) and `depends` (component -> its parts) come from the course where it
    is at hand; they decide only how many points are "for now" and the order of the parts waited on.
    `student`: whether it is a student's copy; None: as its notes say (`_student`)."""
    weights, depends = weights or {}, depends or {}
    components = []
    for c in data.get("components", []):
        # a document written by hand (a Gradescope test's) may say only whether a check is hidden
        checks = [CheckResult(t["id"], Tier(t.get("tier") or (Tier.HIDDEN if t.get("hidden") else Tier.PUBLIC)),
                              float(weights.get(t["id"], 1.0)),
                              Outcome(Status(t["status"]), Reason(t.get("reason", Reason.NONE)), t.get("message", ""),
                                      Details.from_json(t), t.get("output", ""),
                                      float(t.get("duration_seconds", 0.0))),
                              tuple(t.get("excused_by", ())), Attribution.from_json(t.get("attribution")),
                              tuple(t.get("waiting_on", ())))
                  for t in c.get("tests", [])]
        # a document written by hand (a regrade's or a summary's test) may leave out the file and maximum that
        # nothing read from it needs
        components.append(ComponentResult(c["name"], c.get("file", ""), _number(c["score"]),
                                          _number(c.get("max_score", 0.0)), checks,
                                          tuple(depends.get(c["name"], c.get("waiting_on", ()))),
                                          _sightings(c.get("forbidden")), _sightings(c.get("flagged")),
                                          held=c.get("held"), diagnosis=Diagnosis.from_json(c.get("diagnosis")),
                                          telling=c.get("telling")))
    start = data.get("start_here")
    here = {c.name for c in components}
    upstream = [dict(start)] if isinstance(start, dict) and start.get("name") not in here else []
    duration = data.get("duration_seconds", 0.0)
    # the notes as data; a report written before "noted" (or one a batch step made) has words only
    notes = [Note.from_json(n) for n in data.get("noted", data.get("notes", []))]
    return Report(data.get("assignment", ""), title or data.get("title", ""), Path(str(data.get("submission", ""))),
                  components, float(duration) if isinstance(duration, (int, float)) else 0.0,
                  notes, data.get("isolation", ""), data.get("isolation_detail", ""),
                  Performance.from_json(data.get("performance")), Gpu.from_json(data.get("gpu")), upstream,
                  Reveal(data.get("reveal", Reveal.FIX)),
                  _student(notes) if student is None else student)


def _student(notes: list[Note]) -> bool:
    """Whether a report's notes mark a student's copy: its PUBLIC_ONLY note (grader.judging.scoring.notes), the
    one mark the JSON has of it. What a student's copy says of a diagnosis depends on it (grader.words.sentence:
    at reveal "bug" its message is the bug alone), and a view words the message again from the data."""
    return any(n.kind == Noted.PUBLIC_ONLY for n in notes)


def _sightings(data) -> list[Sighting]:
    """A component's "forbidden" or "flagged" list, as far as it is well formed."""
    found = [Sighting.from_json(d) for d in data] if isinstance(data, list) else []
    return [s for s in found if s is not None]


def _number(value) -> float:
    # as written: a course's points may be whole (`points = 10`), and what is printed or written again
    # from the rebuilt report (Gradescope's max_score "10", not "10.0") must read as the JSON did
    return value if isinstance(value, int | float) and not isinstance(value, bool) else float(value)


@dataclass(frozen=True)
class Override:
    """An instructor's override on a component of a batch's report (grader.batch.regrade)."""

    points: float
    reason: str
    graded: float  # what grading gave, which the override replaces


@dataclass(frozen=True)
class Graded:
    """A batch's report document (grader.batch.run): the Report `to_json` wrote it from, and what the batch
    adds beside it, which the typed Report does not hold. Read here, in one place, as the Report is."""

    data: dict  # the document, as written: `report` is rebuilt from it when first asked for
    # the document's "score": after overrides and the late penalty (the Report's is what grading gave)
    total: float
    graded_total: float  # the total before overrides: the document's "graded_score", where it has overrides
    status: str  # the batch record's status (a grader.batch.outputs.RowStatus); "" where it has none
    batch: dict  # the batch's record: key, digests, lms_id, student_id, message
    overrides: dict[str, Override] = field(default_factory=dict)  # component -> its override
    late: dict | None = None  # grader.batch.late's record: hours, days, source, percent, points, before, note
    notes: list[str] = field(default_factory=list)  # the report's notes, the late penalty's among them

    @cached_property
    def report(self) -> Report:
        # on demand, once: rebuilding every check is most of what reading a document costs, and a class's
        # outputs ask a row's total, status or lateness far more often than its checks (a class of 10,000:
        # benchmarks/class_outputs.py)
        return from_json(self.data)

    def held(self, component: ComponentResult) -> float | None:
        """The points `component` earned and holds at 0 for review, where no override released them."""
        held = component.held
        return held if isinstance(held, int | float) and component.name not in self.overrides else None


def graded(data: dict) -> Graded:
    """`data`, a batch's report document (or a report `to_json` wrote), read once; its checks when asked."""
    batch = data.get("batch") or {}
    overrides = {c["name"]: Override(o["points"], o["reason"], o["graded"])
                 for c in data.get("components", []) if (o := c.get("override"))}
    # a document written by hand or cut short (a batch's OUT edited) may lack its score: 0, as for no grading
    score = data.get("score", 0.0)
    return Graded(data, score, data.get("graded_score", score), batch.get("status", ""), batch, overrides,
                  data.get("late"), list(data.get("notes", [])))


def entries(data: dict) -> list[dict]:
    """The components' own entries of `data`, for a batch that writes the document again with its edits
    (an override's points) and keeps every other field as it was."""
    return list(data.get("components", []))
