"""What a grading measured beside its checks: the performance feedback (grader.grading.performance) and the
GPU tier's summary (grader.grading.stages), as the report holds them and its JSON writes them. Standard library
only, as grader.results."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from grader import words
from grader.findings import Note, Noted


class Timing(StrEnum):
    """A performance entry's status (grader.grading.performance)."""

    MEASURED = "measured"
    ERROR = "error"
    NOT_ATTEMPTED = "not attempted"


@dataclass(frozen=True)
class PerformanceEntry:
    """One timed component on one device (grader.grading.performance): forward + backward against torch's
    built-in and, in the instructor's grade, the reference (`against_reference`). A ratio is None where
    either side measured nothing; `message` says why an ERROR timed nothing."""

    component: str
    device: str
    status: Timing
    message: str = ""
    seconds: float = 0.0
    memory_bytes: int = 0
    torch_seconds: float = 0.0
    torch_memory_bytes: int = 0
    time_vs_torch: float | None = None
    memory_vs_torch: float | None = None
    against_reference: bool = False
    reference_seconds: float = 0.0
    reference_memory_bytes: int = 0
    time_vs_reference: float | None = None
    memory_vs_reference: float | None = None

    def to_json(self) -> dict:
        out: dict = {"component": self.component, "device": self.device, "status": str(self.status)}
        if self.status == Timing.ERROR:
            out["message"] = self.message
        if self.status == Timing.MEASURED:
            out.update(seconds=self.seconds, memory_bytes=self.memory_bytes, torch_seconds=self.torch_seconds,
                       torch_memory_bytes=self.torch_memory_bytes, time_vs_torch=self.time_vs_torch,
                       memory_vs_torch=self.memory_vs_torch)
            if self.against_reference:
                out.update(reference_seconds=self.reference_seconds,
                           reference_memory_bytes=self.reference_memory_bytes,
                           time_vs_reference=self.time_vs_reference, memory_vs_reference=self.memory_vs_reference)
        return out

    @classmethod
    def from_json(cls, data: dict) -> PerformanceEntry:
        """As written: the measurements are kept as they are (the kit's golden record holds placeholders)."""
        status = data.get("status")
        return cls(str(data.get("component", "")), str(data.get("device", "")),
                   Timing(status) if status in set(Timing) else Timing.ERROR, str(data.get("message", "")),
                   data.get("seconds", 0.0), data.get("memory_bytes", 0), data.get("torch_seconds", 0.0),
                   data.get("torch_memory_bytes", 0), data.get("time_vs_torch"), data.get("memory_vs_torch"),
                   "reference_seconds" in data, data.get("reference_seconds", 0.0),
                   data.get("reference_memory_bytes", 0), data.get("time_vs_reference"),
                   data.get("memory_vs_reference"))


@dataclass(frozen=True)
class Performance:
    """The performance feedback of one grading (the JSON's `performance`): its entries, and the points the
    course gives for components within `max_ratio` of the baseline (`informational`: none)."""

    informational: bool
    score: float
    max_score: float
    max_ratio: float
    shape: dict[str, int]
    repeat: int
    entries: list[PerformanceEntry]
    overhead_seconds: float

    def to_json(self) -> dict:
        return {"informational": self.informational, "score": self.score, "max_score": self.max_score,
                "max_ratio": self.max_ratio, "shape": dict(self.shape), "repeat": self.repeat,
                "measured": words.MEASURED, "entries": [e.to_json() for e in self.entries],
                "overhead_seconds": self.overhead_seconds}

    @classmethod
    def from_json(cls, data: object) -> Performance | None:
        """None where nothing was timed (`null`) or `data` is not one."""
        if not isinstance(data, dict):
            return None
        return cls(bool(data.get("informational", True)), data.get("score", 0.0), data.get("max_score", 0),
                   data.get("max_ratio", 0.0), dict(data.get("shape", {})), data.get("repeat", 0),
                   [PerformanceEntry.from_json(e) for e in data.get("entries", []) if isinstance(e, dict)],
                   data.get("overhead_seconds", 0.0))


@dataclass(frozen=True)
class Gpu:
    """The GPU tier of a `--device cuda` grading (the JSON's `gpu`): whether it ran, on which device, how many
    of its checks passed (None where it did not run) and how long they took."""

    available: bool
    device: str
    checks: int
    seconds: float
    passed: int | None = None

    def note(self) -> Note:
        """The report's note on the GPU tier."""
        if not self.available:
            return Note(Noted.GPU_SKIPPED, counts=(self.checks,))
        return Note(Noted.GPU_RAN, self.device, counts=(self.passed or 0, self.checks, self.seconds))

    def to_json(self) -> dict:
        out: dict = {"available": self.available, "device": self.device, "checks": self.checks,
                     "seconds": self.seconds}
        if self.available:
            out["passed"] = self.passed
        return {**out, "note": words.noted(self.note())}

    @classmethod
    def from_json(cls, data: object) -> Gpu | None:
        if not isinstance(data, dict):
            return None
        return cls(bool(data.get("available")), str(data.get("device", "")), data.get("checks", 0),
                   data.get("seconds", 0.0), data.get("passed"))
