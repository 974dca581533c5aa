"""Performance feedback: the submission's attention, multi-head attention and encoder layer, timed.

Forward and backward on fixed shapes (grader.sandbox.child.profile), against torch's built-ins
on the same shapes (F.scaled_dot_product_attention, nn.MultiheadAttention,
nn.TransformerEncoderLayer) and, in the instructors' tier, against the reference; on the CPU,
and on the GPU when the GPU tier runs. Reported as ratios (yours / theirs), with memory, never
against a time of its own: the seconds depend on the machine, the ratios much less.

The submission's numbers are measured in its own process, which it controls: they can be forged
(its code can replace the clock). So they decide no points unless course.toml's [performance]
gives some (`points`: earned per component whose CPU time is within `max_ratio` of the
reference's, or of torch's without the reference), and a course that does trusts what the
student's code reports.
"""

import dataclasses
import time
from dataclasses import dataclass

from grader import words
from grader.course import PERFORMANCE_KINDS, Assignment, Course
from grader.judging import attribution
from grader.measured import Performance, PerformanceEntry, Timing
from grader.results import Outcome, Reason
from grader.sandbox.child import profile
from grader.sandbox.host import StudentError, WorkerFault

assert PERFORMANCE_KINDS == profile.KINDS, "course.toml's kinds are the ones the worker can time"


@dataclass(frozen=True)
class Timed:
    """One timing: the `kind` of profile (grader.sandbox.child.profile) of `target`, on `device`, `repeat` steps."""

    kind: str
    target: str
    device: str
    repeat: int


def measure(course: Course, assignment: Assignment, student, results: dict[str, Outcome], gpu: str | None,
            has_reference: bool) -> Performance | None:
    """The JSON's `performance`: one entry per timed component of `assignment` and device, or None
    when course.toml times none of its components."""
    config = course.performance
    timed = [c for c in assignment.components if config is not None and c.name in config.components]
    if config is None or not timed:
        return None
    entries, start = [], time.monotonic()
    for comp in timed:
        kind = config.components[comp.name]
        attempted = any(o.reason != Reason.NOT_ATTEMPTED for chk in comp.checks if (o := results.get(chk.id)))
        for device in ("cpu", *([gpu] if gpu else [])):
            if attempted:
                timed_here = Timed(kind, attribution.target(comp), device, config.repeat)
                entries.append(_entry(course, student, timed_here, comp.name, has_reference))
            else:
                entries.append(PerformanceEntry(comp.name, device, Timing.NOT_ATTEMPTED))
    within = [_within(e, config.max_ratio) for e in entries if e.device == "cpu"]
    score = round(config.points * sum(within) / len(within), 2) if config.points else 0.0
    return Performance(not config.points, score, config.points, config.max_ratio, dict(profile.SHAPE), config.repeat,
                       entries, round(time.monotonic() - start, 3))


def _entry(course: Course, student, timed: Timed, component: str, reference: bool) -> PerformanceEntry:
    student.begin_check()
    try:
        got = student.profile(timed.kind, timed.target, timed.device, timed.repeat, dict(profile.SHAPE))
    except StudentError as e:
        return PerformanceEntry(component, timed.device, Timing.ERROR, words.raised(e.type, e.message)[:300])
    except WorkerFault as e:  # a malformed frame included (the worker was killed): the submission's fault
        return PerformanceEntry(component, timed.device, Timing.ERROR, e.detail[:300])
    finally:
        student.reset()
    try:
        own, torch_ = _timing(got["student"]), _timing(got["torch"])
    except Exception:  # whatever it sent (a float too large for one, a list): its own fault, never the grader's
        return PerformanceEntry(component, timed.device, Timing.ERROR, words.MALFORMED_TIMINGS)
    entry = PerformanceEntry(component, timed.device, Timing.MEASURED, "", own[0], own[1], torch_[0], torch_[1],
                             _ratio(own[0], torch_[0]), _ratio(own[1], torch_[1]))
    if not reference:
        return entry
    ref = _reference(course, timed)
    return dataclasses.replace(entry, against_reference=True, reference_seconds=ref[0], reference_memory_bytes=ref[1],
                               time_vs_reference=_ratio(own[0], ref[0]), memory_vs_reference=_ratio(own[1], ref[1]))


def _reference(course: Course, timed: Timed) -> tuple[float, int]:
    """The reference, timed here in the grader's process (its code never enters the submission's),
    on one thread as the submission's process runs."""
    import torch

    from grader.sandbox.child.tree import resolve
    from grader.suite import reference

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        target = resolve(reference.load(course.reference), timed.target)
        got = profile.measure(timed.kind, target, timed.device, timed.repeat)
    finally:
        torch.set_num_threads(threads)
    return _timing(got)


def _timing(got) -> tuple[float, int]:
    seconds, memory = float(got["seconds"]), int(got["memory_bytes"])
    if not (0 < seconds < 1e4 and 0 <= memory):
        raise ValueError("timings out of range")
    return seconds, memory


def _ratio(mine: float, theirs: float) -> float | None:
    return round(mine / theirs, 3) if theirs > 0 and mine > 0 else None


def _within(entry: PerformanceEntry, max_ratio: float) -> bool:
    ratio = entry.time_vs_reference if entry.against_reference else entry.time_vs_torch
    return ratio is not None and ratio <= max_ratio
