"""What the cells of a generated nbgrader notebook call, inside the notebook's kernel.

No student code runs in the kernel. `run_grader` runs the course's grader in a child process,
`python -I -m grader` (the same command as `grade`, both tiers where the course has them), on
the folder the notebook runs in, and keeps the JSON report it writes; each grade cell then
calls `component`, which prints the public side of one component and ends the cell with its
score. What a cell prints never names a hidden check (only how many failed), so feedback
shows none.

nbgrader scores a grade cell 0 for any error or any stderr output, reads a numeric result as
partial credit (above the cell's points it fails the whole notebook), and gives full marks to
a cell with no result at all. So nothing here writes to stderr, every path through
`component` ends with a number in [0, points], and a missing report scores 0.

Standard library only (grader.results is): the kernel needs nothing but an importable `grader`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import warnings

from grader.results import NOT_COUNTED

_MESSAGE_CHARS = 240  # a failed check's message, cut: the full report is `grade assignmentN`


def run_grader(*, assignment: str, course: str, timeout: float) -> dict | None:
    """Grade the folder this notebook runs in (nbgrader starts the kernel there); the JSON report, or None.

    `course` is the instructor's course.toml, baked in when the notebook was written. Under
    `nbgrader autograde` it must exist (else nothing is graded and every component scores 0);
    in a student's own Jupyter, where it does not, the nearest course.toml upward from the
    notebook's folder is used instead (the public tier, as `grade` would run it there).
    """
    submission = os.getcwd()
    course_args = ["--course", course]
    if not os.path.isfile(course):
        if os.environ.get("NBGRADER_EXECUTION") == "autograde":
            print(f"not graded: the course file {course} does not exist")
            return None
        course_args = []
    with tempfile.TemporaryDirectory(prefix="grade-nbgrader-") as scratch:
        out = os.path.join(scratch, "report.json")
        cmd = [sys.executable, "-I", "-m", "grader", assignment, "--submission", submission, "--json", out,
               *course_args]
        # the grader looks for course.toml from its working folder only when none is given
        status = _run(cmd, cwd=scratch if course_args else submission, timeout=timeout)
        if status is not None:
            print(f"not graded: {status}")
            return None
        try:
            with open(out) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"not graded: the grader's report could not be read ({type(e).__name__})")
            return None
    if not isinstance(report, dict) or not isinstance(report.get("components"), list):
        print("not graded: the grader's report has no components")
        return None
    _summary(report)
    return report


def _run(cmd: list[str], *, cwd: str, timeout: float) -> str | None:
    """Run the grader; None when it exited 0, else what went wrong (never its stderr, which is not shown)."""
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    # a session of its own, so that a timeout kills the grader and everything it started
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as e:
        return f"the grader could not start ({e.strerror})"
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"the grader did not finish within {timeout:g} s"
    if proc.returncode == 0:
        return None
    lines = err.strip().splitlines()
    # exit 2 is a one-line usage or configuration error naming the bad value; anything else
    # may be a traceback through the hidden suite, which feedback must not show
    if proc.returncode == 2 and len(lines) == 1:
        return lines[0]
    return f"the grader failed (exit status {proc.returncode}); run `grade` on this folder to see why"


def _summary(report: dict) -> None:
    print(f"{report.get('assignment')}: {report.get('score')} / {report.get('max_score')} points "
          f"(graded in {report.get('duration_seconds')} s, {report.get('isolation') or 'unknown'} isolation)")
    hidden = {t.get("id") for c in report["components"] for t in c.get("tests", []) if t.get("hidden")}
    for note in report.get("notes", []):
        if not any(check_id and check_id in note for check_id in hidden):
            print(f"  {note}")


def component(report: dict | None, name: str, *, points: float) -> float:
    """Print the public side of component `name` and return its score, in [0, points], 2 decimals."""
    # nbgrader scores any stderr as 0: whatever is written here goes to stdout
    with contextlib.redirect_stderr(sys.stdout), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry = next((c for c in (report or {}).get("components", [])
                      if isinstance(c, dict) and c.get("name") == name), None)
        if entry is None:
            print(f"{name}: not graded (the first cell says why)")
            return 0.0
        for line in describe(entry):
            print(line)
        return clamp(entry.get("score"), points)


def performance(report: dict | None, *, points: float) -> float:
    """Print the performance tier's timings (grader.performance) and return its score, as `component` does."""
    with contextlib.redirect_stderr(sys.stdout), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        perf = (report or {}).get("performance")
        if not isinstance(perf, dict):
            print("performance: not measured (the first cell says why)")
            return 0.0
        print(f"performance: {perf.get('score')} / {perf.get('max_score')} points, for the components within "
              f"{perf.get('max_ratio')}x the baseline's CPU time")
        for entry in perf.get("entries", []):
            if isinstance(entry, dict):
                ratio = entry.get("time_vs_reference", entry.get("time_vs_torch"))
                detail = f"{ratio}x" if entry.get("status") == "measured" else _one_line(
                    entry.get("message") or entry.get("status"))
                print(f"  {entry.get('component')} ({entry.get('device')}): {detail}")
        return clamp(perf.get("score"), points)


def clamp(score: object, points: float) -> float:
    """A score nbgrader accepts as partial credit: a finite number in [0, points], 2 decimals; else 0."""
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return 0.0
    return max(0.0, min(round(float(score), 2), float(points)))


def describe(entry: dict) -> list[str]:
    """One component's public detail: its public checks by id and message, hidden ones only counted."""
    lines = [f"{entry.get('name')} ({entry.get('file')}): {entry.get('score')} / {entry.get('max_score')} "
             f"points, {entry.get('status')}"]
    if entry.get("status") == "not attempted":
        return [*lines, f"  every check reached a TODO: start with {entry.get('file')}"]
    tests = [t for t in entry.get("tests", []) if isinstance(t, dict)]
    for t in tests:
        if t.get("hidden"):
            continue
        if t.get("status") == "passed":
            lines.append(f"  passed   {t.get('id')}")
        elif t.get("excused_by"):
            parts = [str(p) for p in t["excused_by"]]
            verb = "fails" if len(parts) == 1 else "fail"
            lines.append(f"  excused  {t.get('id')}: fails only because your {' and '.join(parts)} {verb} "
                         "(charged there)")
        elif t.get("reason") in NOT_COUNTED:
            lines.append(f"  skipped  {t.get('id')}: {_one_line(t.get('message'))}")
        else:
            lines.append(f"  FAILED   {t.get('id')}: {_one_line(t.get('message')) or t.get('reason')}")
    hidden = [t for t in tests if t.get("hidden") and t.get("reason") not in NOT_COUNTED]
    failed = sum(1 for t in hidden if t.get("status") != "passed" and not t.get("excused_by"))
    if failed:
        lines.append(f"  {failed} hidden check{'s' * (failed != 1)} failed")
    elif hidden:
        lines.append(f"  hidden checks: all {len(hidden)} passed")
    for hit in entry.get("forbidden", []):
        if isinstance(hit, dict):
            lines.append(f"  forbidden: {hit.get('what')} at {hit.get('where')} ({hit.get('how')}): scores 0")
    return lines


def _one_line(message: object) -> str:
    # plain text: control characters (ANSI escapes from a student's exception) are dropped
    text = " ".join(str(message or "").split())
    text = "".join(ch for ch in text if ch.isprintable())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 3] + "..."
