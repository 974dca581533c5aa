"""A bug costs marks once, where it lives, and fixing code never lowers a grade.

A composite (an EncoderLayer, say) builds on parts (MultiHeadAttention, ...). When some of
those parts fail their own checks, the composite is graded on the reference's versions of
exactly those parts: each of its checks is run again with them swapped in, and that run
decides. A check that fails on the student's parts but passes on the reference's is
excused (the parts are charged in their own components); one that passes on the student's
parts only because a part's bug hides a bug of the composite's own counts as failed, so
that fixing the part cannot cost the composite marks. The status of a part is measured,
never assumed: parts graded in other assignments have their checks run for that purpose
when some check of a composite fails.
"""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from grader import words
from grader.course import Assignment, Component, Course
from grader.findings import Attributed
from grader.results import NOT_COUNTED, Outcome, Reach, Reason, Status, Tier

MISSING = Outcome(Status.ERROR, Reason.MISSING, words.NOT_RUN_AGAIN)
_COUNT = re.compile(r"\d+")

# (check id -> parts to swap in, quick=, one_failure=, reach=) -> outcomes (grader.grading.suites.pytest_run)
Run = Callable[..., dict[str, Outcome]]
# check ids of parts of other assignments -> their outcomes, each part's checks run until its first failure
Parts = Callable[[list[str]], dict[str, Outcome]]


def target(component: Component) -> str:
    """The contract name a stand-in replaces: "assignment1.layer_norm:LayerNorm"."""
    return f"{component.assignment}.{component.file.removesuffix('.py')}:{component.name}"


def failed(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.status != Status.PASSED and outcome.reason not in NOT_COUNTED


@dataclass(frozen=True)
class Blame:
    parts: tuple[str, ...]  # the failing parts of the check's component
    on_reference: Outcome | None  # the check's outcome with their reference versions; None: not run
    # where the composite behaved by how its parts were reached (the control runs): not excused, and this
    # outcome, of its own parts called directly, counts
    told: Outcome | None = None
    why: Attributed = Attributed.TOLD  # what `told` rests on: the control run, or the fed run (UNEXPLAINED)


def attribute(course: Course, assignment: Assignment, results: dict[str, Outcome], run: Run,
              swap: bool, upstream: list[str] | None = None, run_parts: Parts | None = None) -> dict[str, Blame]:
    """check id -> Blame, for the checks of every composite whose parts fail.

    With `swap` false (no reference tree: the students' public tier) nothing is re-run, and
    only the failing checks are blamed: they wait for the parts (grader.judging.scoring). `upstream`, a
    list: filled with the parts of other assignments found failing their own checks, in course
    order; without `swap` the parts of a failing one are run too, so that the earliest is found."""
    components = {c.name: c for a in course.assignments.values() for c in a.components}
    composites = [c for c in assignment.components if c.depends]
    graded = {c.name: [chk.id for chk in c.checks if chk.id not in c.isolated and chk.id in results
                       and results[chk.id].reason not in NOT_COUNTED] for c in composites}
    status = dict(results)
    here = {c.name for c in assignment.components}

    def fails(part: str) -> bool:
        return any(failed(status.get(chk.id)) for chk in components[part].checks)

    if any(failed(results[i]) for ids in graded.values() for i in ids):
        # parts graded elsewhere: run their own checks, only to learn whether they fail (not the GPU
        # tier: it says nothing about the part's arithmetic), so a part's first failure decides
        outside = sorted({d for c in composites for d in c.depends if d not in here})
        run_parts = run_parts or (lambda ids: run(dict.fromkeys(ids, ()), quick=frozenset(ids), one_failure=True))
        status.update(run_parts([chk.id for d in outside for chk in components[d].checks if chk.tier != Tier.CUDA]))
        if upstream is not None and not swap:
            _deepen(components, here, outside, status, run_parts)

    if upstream is not None:
        order = [c.name for a in course.assignments.values() for c in a.components]
        upstream += [name for name in order if name not in here and name in components
                     and any(chk.id in status for chk in components[name].checks) and fails(name)]

    blamed: dict[str, tuple[str, ...]] = {}
    for comp in composites:
        parts = failing_parts(components, comp.name, fails)
        for check in graded[comp.name] if parts else ():
            if swap or failed(results[check]):
                blamed[check] = parts
    if not swap:
        return {check: Blame(parts, None) for check, parts in blamed.items()}
    # a check that failed on the student's parts shows that failure whatever this run finds: only
    # whether it passes here is wanted
    swaps = {check: tuple(target(components[p]) for p in parts) for check, parts in blamed.items()}
    again = run(swaps, quick=frozenset(check for check in blamed if failed(results[check])))
    # the evidence: a check that the reference's parts pass is excused only where the reference's composite,
    # fed the submission's failing parts (grader.suite.fed), fails as the submission's composite did. Nothing
    # of the composite runs there, so nothing of it can tell. Where that run could not be had (a placed run,
    # dropout in training, a callable handed to a part), the control decides: the composite, on its own
    # parts reached as the reference's were (each build and call a round trip to the grader), must fail as
    # it did, on the same draw with the same values.
    excusable = {check: swaps[check] for check in blamed if failed(results[check])
                 and again.get(check, MISSING).status == Status.PASSED}
    quick = frozenset(c for c in excusable if results[c].unshrunk)
    fed = run(excusable, quick=quick, reach=Reach.FED) if excusable else {}
    explained = {check: _explains(results[check], fed.get(check)) for check in excusable}
    unknown = {check: parts for check, parts in excusable.items() if explained[check] is None}
    control = run(unknown, quick=quick & set(unknown), reach=Reach.ECHOED) if unknown else {}
    blame = {}
    for check, parts in blamed.items():
        told, why = None, Attributed.TOLD
        if explained.get(check) is False:
            told, why = results[check], Attributed.UNEXPLAINED
        elif check in control and _told(results[check], control[check]):
            told = results[check]
        blame[check] = Blame(parts, again.get(check, MISSING), told=told, why=why)
    return {**blame, **_isolated(composites, graded, results, run)}


def _isolated(composites: list[Component], graded: dict[str, list[str]], results: dict[str, Outcome],
              run: Run) -> dict[str, Blame]:
    """The isolated checks (run on the reference's parts) that a composite failing others of its checks
    passes, run again on its own parts, called directly, and on the reference's composite fed those parts
    (grader.suite.fed): where the two differ, it behaves by how its parts are reached, and the direct run's
    outcome counts. Where the fed run could not be had, the control (its own parts reached as the
    reference's are) stands in for it."""
    suspect = {chk: comp.depends for comp in composites if any(failed(results[i]) for i in graded[comp.name])
               for chk in comp.isolated if chk in results and results[chk].status == Status.PASSED}
    if not suspect:
        return {}
    quick = frozenset(suspect)
    direct = run(dict.fromkeys(suspect, ()), quick=quick, reach=Reach.OWN)
    steady = {chk for chk in suspect if chk in direct and direct[chk].reason not in (Reason.TIMEOUT, Reason.CRASH,
                                                                                      Reason.GRADER)}
    fed = run(dict.fromkeys(steady, ()), quick=quick, reach=Reach.FED) if steady else {}
    same = {chk: _explains(direct[chk], fed.get(chk)) for chk in steady}
    unknown = {chk for chk in steady if same[chk] is None}
    echoed = run(dict.fromkeys(unknown, ()), quick=quick, reach=Reach.ECHOED) if unknown else {}
    return {chk: Blame(parts, results[chk], told=direct[chk], why=Attributed.UNEXPLAINED if same[chk] is False
                       else Attributed.TOLD)
            for chk, parts in suspect.items() if chk in steady
            and (same[chk] is False or same[chk] is None and chk in echoed and _told(direct[chk], echoed[chk]))}


def _explains(own: Outcome, fed: Outcome | None) -> bool | None:
    """Whether the reference's composite fed the submission's failing parts does as the submission's
    composite did: passes where it passed; otherwise the same status, reason and message (its counts
    aside: an element at the tolerance's edge), and the same largest error within float noise (the two
    compute alike in another order). Both raising is the same failure where the fed run's exception came
    from the reference's composite, or from the submission's part at the line the own run's came from. None
    where the fed run is no evidence: it could not run here (Reason.GRADER: grader.suite.fed.Unsupported),
    or a timeout or crash, which the machine may decide."""
    if fed is None or fed.reason in (Reason.TIMEOUT, Reason.CRASH, Reason.GRADER, Reason.TAMPER, Reason.MISSING):
        return None
    if Status.PASSED in (own.status, fed.status):
        return own.status == fed.status
    if own.status == fed.status == Status.ERROR and Reason.EXCEPTION == own.reason == fed.reason:
        # where the fed run's exception came through the submission's part, the own run's came from the same
        # line (the innermost of the submission's frames): a part cannot raise in the fed run alone to match
        # a composite that raises where it meets its own parts
        theirs = fed.details.where.splitlines()
        return not theirs or own.details.where.splitlines()[-1:] == theirs[-1:]
    if (own.status, own.reason, _COUNT.sub("#", own.message)) != (fed.status, fed.reason, _COUNT.sub("#", fed.message)):
        return False
    a, b = own.details.max_abs_error, fed.details.max_abs_error
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-5) or math.isinf(a) and math.isinf(b)


def _told(own: Outcome, control: Outcome) -> bool:
    """The control run's outcome differs from the run on the submission's own parts: what the check
    found (status, reason, message, the values and example it shows), not what the code printed or
    the time it took. A control that could not finish (a timeout, a crash: the machine may decide
    those) tells nothing."""
    if control.reason in (Reason.TIMEOUT, Reason.CRASH, Reason.GRADER):
        return False
    return (own.status, own.reason, own.message, own.details) != (
        control.status, control.reason, control.message, control.details)


def _deepen(components: dict[str, Component], here: set[str], ran: list[str], status: dict[str, Outcome],
            parts: Parts) -> None:
    """The parts of failing parts of other assignments, run in turn until none fails: a student's
    report starts at the earliest failing part, which may lie two assignments back."""
    done = set(ran)
    while True:
        failing = [d for d in done if any(failed(status.get(chk.id)) for chk in components[d].checks)]
        deeper = sorted({p for d in failing for p in components[d].depends} - done - here)
        if not deeper:
            return
        done |= set(deeper)
        status.update(parts([chk.id for d in deeper for chk in components[d].checks if chk.tier != Tier.CUDA]))


def failing_parts(components: dict[str, Component], name: str, fails: Callable[[str], bool]) -> tuple[str, ...]:
    """The parts that `name`'s failures are laid on: its parts that fail their own checks, and below a
    part that passes them, that part's own parts found failing, all the way down (where their checks
    have run: the parts of this assignment and their direct parts). Each check draws its own inputs: a
    LayerNorm whose default eps is wrong passed under ResidualConnection's checks and failed under a
    DecoderLayer's (the instructor's fresh draws), which the reference's LayerNorm then excuses."""
    found: list[str] = []
    seen: set[str] = set()
    todo = list(components[name].depends)
    while todo:
        part = todo.pop(0)
        if part in seen or part not in components:
            continue
        seen.add(part)
        if fails(part):
            found.append(part)  # swapped whole: the reference's version brings its own parts
        else:
            todo += components[part].depends
    return tuple(found)
