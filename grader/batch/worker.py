"""Grading one submission in a long-lived worker process (the local pool's or a Dask worker's).

A worker grades one submission at a time, each in its own sandbox, like `grade` does; what
it keeps between submissions is the grader's side (pytest, Hypothesis, the course and the
reference, imported once) and a worker template (grader.sandbox.template): torch imported
once, forked into each submission's sandbox before any of its code loads; both are a
grader.grading.warm.Grader per course. Grading the same
tree after others gives the same report as grading it first (tests/kit/sandbox/test_reproducible.py,
tests/kit/sandbox/test_template.py).
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
import traceback
from pathlib import Path

from grader.batch.feedback import feedback
from grader.grading.warm import Grader

# pytest.main, Hypothesis and redirected stdout are process-wide: one grading at a time per
# process, even where a Dask worker runs several tasks in threads
_LOCK = threading.Lock()
# one warm grader per course and process: its template imports torch once, a fork per worker start
_GRADERS: dict[Path, Grader] = {}


def start_pool_worker() -> None:
    """Initializer of a local pool's worker: Ctrl-C is the batch's to handle, SIGTERM interrupts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _interrupt)
    # the grader's side, once per worker rather than once per submission
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401

    import grader.suite.plugin  # noqa: F401


def _interrupt(signum, frame):
    # KeyboardInterrupt ends the pytest session at once; the sandbox is closed on the way out
    raise KeyboardInterrupt


def grader_for(course_path: Path) -> Grader:
    """This process's warm grader for the course, started on first use."""
    from grader.course import load as load_course

    if course_path not in _GRADERS:
        _GRADERS[course_path] = Grader(load_course(course_path)).start()
        atexit.register(_GRADERS[course_path].close)
    return _GRADERS[course_path]


def grade_tree(*, course_path: Path, assignment: str, tree: Path, student: str,
               require_namespaces: bool) -> dict:
    """Grade `tree`: {"report": the JSON report, "feedback": public-tier text, "feedback_full": text}.

    Never raises for what a submission does (the sandbox turns that into outcomes); the
    grader's own trouble comes back as {"error": message} so that the batch keeps a row."""
    with _LOCK:
        started = time.monotonic()
        try:
            from grader.sandbox import isolation

            grader = grader_for(Path(course_path))
            course = grader.course
            exposed = isolation.protects_course(isolation.choose(course.limits), [course.reference, course.suites]) \
                if require_namespaces else ""
            if exposed:
                why = isolation.unavailable() or "isolation is set to process"
                return {"error": f"on worker {os.uname().nodename} the submissions could read the course: {exposed} "
                                 f"(namespaces: {why})"}
            # this worker's front door: the batch names the assignment (a Dask worker is another process)
            report = grader.grade(assignment=course.assignment(assignment), submission=Path(tree))
        except KeyboardInterrupt:
            raise
        except Exception as e:
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            return {"error": f"the grader failed on this submission: {detail[-500:]}",
                    "duration_seconds": round(time.monotonic() - started, 2)}
        from grader.results import to_json

        data = to_json(report)
        (text, page), (text_full, page_full) = (feedback(report, student, hidden=h) for h in (False, True))
        return {"report": data, "feedback": text, "feedback_full": text_full,
                "feedback_html": page, "feedback_full_html": page_full}
