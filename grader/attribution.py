"""A bug costs marks once, where it lives: which failing checks of a composite its parts explain.

A composite (an EncoderLayer, say) builds on parts (MultiHeadAttention, ...). When one of
its checks fails while some of those parts fail their own checks, the check is run again
with the reference's versions of exactly those failing parts swapped in. If it passes
then, the failure comes from the parts, and the check is excused here: the parts are
charged in their own components. If it still fails, the composite's own code is wrong
too, and the check counts. The status of a part is measured, never assumed: parts graded
in other assignments have their checks run for that purpose.
"""

from collections.abc import Callable

from grader.course import Assignment, Component, Course
from grader.results import NOT_COUNTED, Outcome

Run = Callable[[dict[str, tuple[str, ...]]], dict[str, Outcome]]


def target(component: Component) -> str:
    """The contract name a stand-in replaces: "assignment1.layer_norm:LayerNorm"."""
    return f"{component.assignment}.{component.file.removesuffix('.py')}:{component.name}"


def failed(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.status != "passed" and outcome.reason not in NOT_COUNTED


def attribute(course: Course, assignment: Assignment, results: dict[str, Outcome], run: Run,
              swap: bool) -> dict[str, tuple[tuple[str, ...], bool | None]]:
    """check id -> (the failing parts of its component, whether the check passes on their
    reference versions), for every failing check of a composite whose parts fail too.

    With `swap` false (no reference tree: the students' public tier) nothing is re-run:
    whether the check passes on the reference's parts is None (unknown), and it counts."""
    components = {c.name: c for a in course.assignments.values() for c in a.components}
    suspects = {comp.name: [chk.id for chk in comp.checks
                            if chk.id not in comp.isolated and failed(results.get(chk.id))]
                for comp in assignment.components if comp.depends}
    suspects = {name: ids for name, ids in suspects.items() if ids}
    if not suspects:
        return {}
    # parts graded elsewhere: run their own checks, only to learn whether they fail
    here = {c.name for c in assignment.components}
    outside = sorted({d for name in suspects for d in components[name].depends if d not in here})
    status = dict(results)
    if outside:  # the GPU tier is not run for this: it says nothing about the part's arithmetic
        status.update(run({chk.id: () for d in outside for chk in components[d].checks if chk.tier != "cuda"}))

    def fails(part: str) -> bool:
        return any(failed(status.get(chk.id)) for chk in components[part].checks)

    reruns: dict[str, tuple[str, ...]] = {}
    blamed: dict[str, tuple[str, ...]] = {}
    for name, ids in suspects.items():
        parts = tuple(d for d in components[name].depends if fails(d))
        for check in ids if parts else ():
            blamed[check] = parts
            reruns[check] = tuple(target(components[p]) for p in parts)
    if not swap:
        return {check: (parts, None) for check, parts in blamed.items()}
    again = run(reruns) if reruns else {}
    return {check: (parts, check in again and again[check].status == "passed") for check, parts in blamed.items()}
