"""Gradescope's results.json for one submission, from the kit's JSON report.

One test per component, as `grade batch` writes it (grader.batch.outputs.gradescope: score,
max_score, status, the diagnosis first, public-tier detail, hidden checks as counts), visible
to the student at once. The hidden tier's detail (which hidden checks failed, and why) is one
more test per component that has any, shown only once the instructor publishes the grades
("after_published"), and worth nothing of its own: its points are in the component's test.
Standard library only, like the reports it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.batch import safe
from grader.batch.outputs import gradescope
from grader.report_json import graded
from grader.results import ComponentResult, Status, Tier

ISOLATION = {
    "namespaces": "namespaces (the submission's process had no network and a private root: this "
                  "autograder's files and the reference were out of its reach)",
    "process": "process (resource limits only: the submission's process could read and write what "
               "the autograder can)",
    # "seccomp": what it blocks depends on the kernel (Landlock or not): the report's isolation_detail
}


def results(report: dict, *, execution_time: float, notes: Sequence[str] = ()) -> dict:
    """results.json for `report` (the kit's JSON report); `notes`: lines the top output adds."""
    data, doc = gradescope(report), graded(report)
    tests = []
    for test, component in zip(data["tests"], doc.report.components, strict=True):
        tests.append(test)
        hidden = _hidden_detail(component)
        if hidden:
            tests.append({"name": f"{component.name}: hidden checks", "status": test["status"],
                          "output": safe.inert(hidden, lines=True), "visibility": "after_published"})
    isolation = doc.report.isolation or ""
    detail = ISOLATION.get(isolation) or doc.report.isolation_detail or isolation
    top = [f"{doc.report.assignment}: {doc.total:g} / {doc.report.max_score:g} points.",
           *([f"Isolation: {detail}."] if isolation else []),
           *notes, *([data["output"]] if data["output"] else [])]
    # the submission's text (exception types and messages, its output) shown inert: no escape reaches a page
    return {**data, "execution_time": round(execution_time, 2), "output": safe.inert("\n".join(top), lines=True),
            "tests": tests}


MAX_MESSAGE = 4500  # a check's message in the output: what the grader keeps of an exception, and its wording


def _hidden_detail(component: ComponentResult) -> str:
    lines = []
    for t in component.checks:
        if t.tier == Tier.HIDDEN and t.outcome.status != Status.PASSED and not t.excused_by:
            lines.append(f"{t.outcome.status}: {t.id}: {t.outcome.message[:MAX_MESSAGE]}".strip())
    return "\n".join(lines)
