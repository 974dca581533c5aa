"""A warm grader: one process that grades submission after submission.

    with Grader(course) as grader:
        for tree in trees:
            report = grader.grade(assignment=course.assignment("assignment3"), submission=tree)

What a cold `grade` pays once per run is paid here once per process: the grader's imports
(pytest, Hypothesis, torch, the suites and the reference, which stay in `sys.modules`) and a
worker template (grader.sandbox.template) that has imported torch, so that each grading's
worker is a fork of it rather than a fresh Python. Every grading still gets a fresh worker in
the same isolation, and the same JSON as a cold run (tests/kit/sandbox/test_reproducible.py). `grade`, `grade
--watch`, `grade batch` (each pool or Dask worker) and the kit's own tests all grade through
this class; `template=False` starts each worker as a fresh Python instead, which a single cold
run prefers (its worker imports torch while this process imports the rest). `helper=True` also
starts a second grader process (grader.grading.split; `grade --watch` asks for one where a second core is
free): once it has warmed up, it grades the later components of each grading while this process
grades the others, with the same JSON. `reuse=True` (`grade --watch` again) runs again only the
checks of components whose files changed since the last grading (grader.grading.reuse), with the same JSON.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.course import Assignment, Course, load
from grader.grading.known_parts import KnownParts

if TYPE_CHECKING:
    from grader.grading.reuse import Reuse
    from grader.grading.split import Done, Helper, Job, Start
    from grader.results import Outcome, Report
    from grader.sandbox.host import Sandbox
    from grader.sandbox.template import Template


class Grader:
    def __init__(self, course: Course, *, template: bool = True, helper: bool = False, reuse: bool = False):
        self.course = course
        self._use_template = template
        self._template: Template | None = None
        self._use_helper = helper
        self._helper: Helper | None = None
        self._cost: dict[str, float] = {}  # seconds by check, from the last grading that ran it
        self._reuse: Reuse | None = None
        self._known = KnownParts()  # what attribution learnt of the parts of other assignments, by their files
        self.only: frozenset[str] | None = None  # check ids every grading runs alone (grader.grading.only)
        if reuse:
            from grader.grading.reuse import Reuse

            self._reuse = Reuse()

    def __enter__(self) -> Grader:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> Grader:
        """Import the grader's side and start the template (where templates run); idempotent."""
        import hypothesis  # noqa: F401
        import pytest  # noqa: F401

        import grader.suite.plugin  # noqa: F401
        from grader.grading.split import Helper
        from grader.sandbox.template import Template, TemplateError, unavailable

        if self._use_helper and self._helper is None:
            self._helper = Helper(self.course)  # it warms up while this process grades
        if self._use_template and self._template is None and not unavailable():
            try:
                self._template = Template(self.course.limits).start()
            except TemplateError:  # grading still works, each worker a fresh Python
                self._use_template = False
        return self

    def sandbox(self, *, assignment: Assignment, submission: Path, device: str = "cpu") -> Sandbox:
        """Stage `submission` and start its worker now (see grader.grading.pipeline.start_sandbox)."""
        from grader.grading.pipeline import start_sandbox

        return start_sandbox(course=self.course, assignment=assignment, submission=submission, device=device,
                             template=self._template)

    def grade(self, *, assignment: Assignment, submission: Path, device: str = "cpu",
              sandbox: Sandbox | None = None, only: frozenset[str] | None = None) -> Report:
        """Grade `submission` (see grader.grading.pipeline.grade_submission); `assignment`: as the caller
        resolved it from its name (course.assignment), once; `sandbox`: one from self.sandbox; `only`: these
        checks alone (default: self.only, which `grade --watch --only` sets)."""
        from grader.grading.pipeline import grade_submission
        from grader.grading.run import Options, Services
        from grader.grading.split import Helper

        if self._helper is not None and self._helper.broken:  # (a reply cut off by Ctrl-C): a new one warms up
            self._helper.close(now=True)
            self._helper = Helper(self.course)
        services = Services(template=self._template, helper=self._helper, cost=self._cost, reuse=self._reuse,
                            known=self._known)
        report = grade_submission(course=self.course, assignment=assignment, submission=submission, sandbox=sandbox,
                                  options=Options(device=device, only=only or self.only), services=services)
        self._cost.update({check.id: check.outcome.duration for comp in report.components for check in comp.checks})
        return report

    def await_helper(self, seconds: float) -> bool:
        """Wait at most `seconds` for the helper to be ready, which takes a grading first (its warm-up
        job is the far half of this process's first grading); whether it is (False without one)."""
        return self._helper is not None and self._helper.ready(wait=seconds)

    @property
    def reused_checks(self) -> int:
        """How many checks gradings took from an earlier grading, their files unchanged (grader.grading.reuse)."""
        return self._reuse.reused if self._reuse is not None else 0

    @property
    def known_parts(self) -> int:
        """How many times a grading took a part of another assignment's outcomes from an earlier grading
        (grader.grading.known_parts)."""
        return self._known.reused

    @property
    def split_gradings(self) -> int:
        """How many gradings the helper took part in."""
        return self._helper.jobs if self._helper is not None else 0

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()
            self._helper = None
        if self._template is not None:
            self._template.close()
            self._template = None


def serve(start: Start) -> None:
    """The helper's side (grader.grading.split.Helper starts it): a warm grader of its own that grades the
    jobs read from stdin until it closes."""
    from grader.grading.split import Ready

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else prints cannot corrupt the replies

    def reply(message: object) -> None:
        data = pickle.dumps(message)
        replies.write(struct.pack(">Q", len(data)) + data)
        replies.flush()

    course = load(start.course)
    with Grader(course) as grader:
        reply(Ready())
        while True:
            try:
                job = pickle.load(sys.stdin.buffer)
            except EOFError:
                return
            try:
                reply(_grade_far(grader, course, job))
            except Exception:
                from grader.grading.split import Failed

                reply(Failed(traceback.format_exc()[-3000:]))


def _grade_far(grader: Any, course: Course, job: Job) -> Done:
    from grader.grading.split import Done, calls
    from grader.grading.suites import frozen_heap, one_intra_op_thread, pytest_run
    from grader.suite.remote import Submission

    # the helper's own front door: the job names its assignment (resolved once more, in this process)
    sandbox = grader.sandbox(assignment=course.assignment(job.assignment), submission=job.submission,
                             device=job.device)
    try:
        student = Submission(sandbox, job.gpu, job.reference)
        student.forbidden = list(job.forbidden)
        with one_intra_op_thread(), frozen_heap():
            results: dict[str, Outcome] = pytest_run(course, student, job.checks, quick=job.quick)
        return Done(results=results, executed=calls(student), faults=list(sandbox.faults), modules=student.modules)
    finally:
        sandbox.close()
