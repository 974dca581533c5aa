"""The stages of a grading, in order, each a function over the GradingRun (grader.grading.run) that
fills in its part of the run's record; `report` builds the Report from the record, once, at the end.

While the submission's worker runs (grader.grading.pipeline closes the sandbox after them):
run_checks, attribute, shrink, measure, judge_forbidden, collect. After it: score, diagnose.
"""

import time
from collections.abc import Callable

from grader import words
from grader.grading.run import Grading, GradingRun
from grader.judging import attribution, diagnosis, forbidden, scoring, telling
from grader.measured import Gpu
from grader.results import Outcome, Reason, Report, Status, Tier
from grader.sandbox import isolation


def run_checks(run: GradingRun) -> None:
    """Every check of the assignment that runs here, a component's kept results where its files did
    not change (grader.grading.reuse), the later components' in the helper meanwhile (grader.grading.split)."""
    from grader.grading import split

    spec, reuse = run.assignment, run.services.reuse
    # a composite's failure that its parts' reference versions excuse is not shown: with those at
    # hand (the instructors' tier) its example is shrunk only where it is shown, once blame is known
    later = frozenset(chk.id for comp in spec.components if comp.depends for chk in comp.checks
                      if chk.id not in comp.isolated) if run.has_reference else frozenset()
    checks = {chk.id: () for comp in spec.components for chk in comp.checks if chk.tier != Tier.CUDA or run.gpu}
    kept = reuse.recall(run) if reuse is not None else {}
    reused = {chk.id for comp in spec.components if comp.name in kept for chk in comp.checks}
    results = split.run(run, {c: p for c, p in checks.items() if c not in reused}, later)
    if reuse is not None:
        reuse.keep(run, {c.name for c in spec.components} - set(kept), results)
        reuse.restore(run, results, kept)
    run.record.results = results


def attribute(run: GradingRun) -> None:
    """Blame for the composites' failing checks (grader.judging.attribution), and the failing parts of
    earlier assignments."""
    rec, known = run.record, run.services.known
    rec.blame = attribution.attribute(run.course, run.assignment, rec.results, run.run, swap=run.has_reference,
                                      upstream=rec.upstream,
                                      run_parts=(lambda ids: known.run(run, ids)) if known is not None else None)


def shrink(run: GradingRun) -> None:
    """The unshrunk failures that the report shows, run again with shrinking (`shrunk`)."""
    run.record.results.update(shrunk(run.record.results, run.record.blame, run.run))


def shrunk(results: dict[str, Outcome], blame: dict[str, attribution.Blame],
           rerun: Callable[[dict[str, tuple[str, ...]]], dict[str, Outcome]]) -> dict[str, Outcome]:
    """The outcomes that replace `results`' unshrunk failures that the report shows (not excused by
    `blame`), `rerun` with shrinking: the same draws fail (derandomized), and the example becomes the
    minimal one. Shrinking may end on another failure of the submission's (an exception shrunk to a
    mismatch): that one is shown, as the student's run, which shrinks from the start, shows it and the
    bug table records it; a rerun that passes or times out changes nothing."""
    excused = {check for check, b in blame.items()
               if b.on_reference is not None and b.on_reference.status == Status.PASSED and b.told is None}
    shown = [check for check, outcome in results.items() if outcome.unshrunk and check not in excused]
    again = rerun(dict.fromkeys(shown, ())) if shown else {}
    failing = (Status.FAILED, Status.ERROR)
    return {check: outcome for check, outcome in again.items()
            if outcome.status in failing and results[check].status in failing}


def measure(run: GradingRun) -> None:
    """Timings against torch's built-ins and the reference (grader.grading.performance); with --only,
    none (they are not what was asked for, and cost a second or more)."""
    from grader.grading import performance

    if not run.options.only:
        run.record.performance = performance.measure(run.course, run.assignment, run.student, run.record.results,
                                                     run.gpu, run.has_reference)


def judge_forbidden(run: GradingRun) -> None:
    """The forbidden APIs in the staged copy, which is what ran: scanned before the sandbox and its folder
    go (grader.judging.forbidden)."""
    student = run.student
    run.record.forbidden = forbidden.judge(run.assignment, run.staged, student.executed)


def collect(run: GradingRun) -> None:
    """What the sandbox saw: the restarts of the submission's process, the files it did not stage."""
    run.record.faults = list(run.sandbox.faults)
    run.record.refused = list(run.sandbox.staged.refused)
    run.record.started, run.record.isolation = run.sandbox.created, run.sandbox.isolation


def score(run: Grading) -> None:
    """Points by component (grader.judging.scoring), the checks that could not run here left out."""
    rec, device = run.record, run.options.device
    for component in run.assignment.components:
        for check in component.checks:
            if check.tier == Tier.HIDDEN and not run.has_reference:
                rec.unavailable[check.id] = Outcome(Status.SKIPPED, Reason.UNAVAILABLE, words.HIDDEN_TIER)
            elif check.tier == Tier.CUDA and device != "cuda":
                rec.unavailable[check.id] = None
            elif check.tier == Tier.CUDA and run.gpu is None:
                rec.unavailable[check.id] = Outcome(Status.SKIPPED, Reason.NO_CUDA, words.NO_CUDA)
    rec.components = scoring.components(run.assignment, _judged(run))


def diagnose(run: Grading) -> None:
    """The classic bug each component's failures match (grader.judging.diagnosis), with bugs.json read
    once, and the failure to show in full (grader.judging.telling)."""
    rec = run.record
    # a check that waits on a failing part (no reference here) says nothing of its own component either
    excused = frozenset(t.id for c in rec.components for t in c.checks if t.excused_by or t.waiting_on)
    table = diagnosis.load(run.course)
    # a bug is named from all of a component's public checks: with --only some did not run
    named = {} if run.options.only else diagnosis.diagnose(run.course, run.assignment, rec.results, excused,
                                                           table=table, upstream=frozenset(rec.upstream))
    for comp in rec.components:
        comp.diagnosis = named.get(comp.name)
        comp.telling = getattr(telling.most_telling(comp, table), "id", None)


def report(run: Grading) -> Report:
    """The Report, from the run's record: built here, once."""
    from grader.grading import only as narrowed

    rec, course, spec = run.record, run.course, run.assignment
    notes = scoring.notes(course, _judged(run), rec.faults, rec.refused)
    if run.options.only:
        notes.append(narrowed.note(run.options.only, spec))
    gpu = gpu_summary(spec.components, rec.results, run.gpu) if run.options.device == "cuda" else None
    if gpu is not None:
        notes.append(gpu.note())
    return Report(spec.name, spec.title, run.submission, rec.components, time.monotonic() - rec.started,
                  notes, isolation=rec.isolation, isolation_detail=isolation.describe(rec.isolation),
                  performance=rec.performance, gpu=gpu, upstream=_upstream(run),
                  # the course's level, never past what a student kit's bug table holds
                  reveal=diagnosis.told(course), student=scoring.student(course))


def _judged(run: Grading) -> scoring.Judged:
    rec = run.record
    return scoring.Judged(rec.results, rec.unavailable, rec.blame, rec.forbidden,
                          hold=getattr(run.course, "flagged", "hold") == "hold")


def _upstream(run: Grading) -> list[dict]:
    """The report starts at the earliest failing part, whatever its assignment: in the instructor's grade
    too, where the reference excuses every failure here that runs through it (its points are whole, the
    model does not work yet)."""
    components = {c.name: c for a in run.course.assignments.values() for c in a.components}
    return [{"name": n, "file": f"{components[n].assignment}/{components[n].file}"} for n in run.record.upstream]


def gpu_summary(components, results: dict[str, Outcome], gpu: str | None) -> Gpu:
    """What the grading says of the GPU tier (the JSON's `gpu`, with the report's note: Gpu.note)."""
    ids = [chk.id for comp in components for chk in comp.checks if chk.tier == Tier.CUDA]
    if gpu is None:
        return Gpu(False, "", len(ids), 0.0)
    import torch

    name = torch.cuda.get_device_name(torch.device(gpu)) if gpu.startswith("cuda") else gpu
    seconds = round(sum(results[i].duration for i in ids if i in results), 2)
    passed = sum(results[i].status == Status.PASSED for i in ids if i in results)
    return Gpu(True, name, len(ids), seconds, passed)

