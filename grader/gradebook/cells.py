"""What the cells of a generated nbgrader notebook call, inside the notebook's kernel.

No student code runs in the kernel. `run_grader` runs the course's grader in a child process,
`python -I -m grader` (the same command as `grade`), on the folder the notebook runs in, and
keeps the JSON report it writes; each grade cell then calls `component`, which prints the
public side of one component as the terminal report shows it (the diagnosis, the most telling
failed check with its expected and got values, where, the example and the hint) and ends the
cell with its score. What a cell prints never names a hidden check (only how many failed), nor
a path of the instructor's, so feedback shows neither.

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
from dataclasses import replace

from grader.measured import Timing
from grader.report_json import Graded, from_json, graded
from grader.results import NOT_COUNTED, CheckResult, ComponentResult, ComponentStatus, Status, Tier
from grader.reveal import Reveal

# the instructor's course.toml, set by the course directory's nbgrader_config.py (grader.gradebook.config)
COURSE_VARIABLE = "GRADE_NBGRADER_COURSE"
_MESSAGE_CHARS = 240  # a check's message in the list of checks, cut: the details below show one in full
_VALUE_CHARS = 2000
_ELIDE_LINES = 6  # of a value (a tensor's rows), as in the terminal report
_DETAILS = ("expected", "got", "max_abs_error", "where", "example", "hint")


def run_grader(*, assignment: str, timeout: float) -> dict | None:
    """Grade the folder this notebook runs in (nbgrader starts the kernel there); the JSON report, or None.

    Under `nbgrader autograde` the course is the instructor's (both tiers), named by
    GRADE_NBGRADER_COURSE, which nbgrader_config.py sets: no notebook carries its path. Without
    it nothing is graded and every component scores 0. Anywhere else (a student's Jupyter,
    `nbgrader validate`) it is that course where the variable names one, else the nearest
    course.toml upward from the notebook's folder: the public course released with the notebook.
    """
    submission = os.getcwd()
    course = os.environ.get(COURSE_VARIABLE, "")
    if os.environ.get("NBGRADER_EXECUTION") == "autograde" and not os.path.isfile(course):
        print("not graded: " + (f"{COURSE_VARIABLE} is not set (run nbgrader from the course directory that "
                                "`grade nbgrader` wrote)" if not course else
                                f"the instructor's {os.path.basename(course)} does not exist"))
        return None
    course_args = ["--course", course] if os.path.isfile(course) else []
    with tempfile.TemporaryDirectory(prefix="grade-nbgrader-") as scratch:
        out = os.path.join(scratch, "report.json")
        cmd = [sys.executable, "-I", "-m", "grader", assignment, "--submission", submission, "--json", out,
               *course_args]
        # the grader looks for course.toml from its working folder only when none is given
        status = _run(cmd, cwd=scratch if course_args else submission, timeout=timeout)
        if status is not None:
            print(f"not graded: {_private(status, course, submission)}")
            return None
        try:
            with open(out) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"not graded: the grader's report could not be read ({type(e).__name__})")
            return None
    if _typed(report) is None:
        print("not graded: the grader's report has no components")
        return None
    report = _scrubbed(report, course, submission)
    _summary(_typed(report))
    return report


def _typed(report: object) -> Graded | None:
    """`report` (the JSON `grade --json` wrote) read typed, or None where it is no report: every cell ends
    with a number, so nothing here may raise on what it was handed."""
    if not isinstance(report, dict):
        return None
    try:
        return graded(report)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _private(text: str, course: str, submission: str) -> str:
    """`text` without the instructor's folders: the course's, the submission's (under the course
    directory), the home folder. Feedback goes to students."""
    folders = {os.path.dirname(os.path.abspath(course)): "<course>"} if course else {}
    folders[submission] = "."
    home = os.path.expanduser("~")
    if len(home) > 1:
        folders[home] = "~"
    for folder in sorted(folders, key=len, reverse=True):
        text = text.replace(folder, folders[folder])
    return text


def _scrubbed(value, course: str, submission: str):
    if isinstance(value, str):
        return _private(value, course, submission)
    if isinstance(value, list):
        return [_scrubbed(v, course, submission) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, course, submission) for k, v in value.items()}
    return value


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


def _summary(doc: Graded | None) -> None:
    if doc is None:
        return
    report = doc.report
    isolation = report.isolation_detail or f"{report.isolation or 'unknown'} isolation"
    print(f"{report.assignment}: {doc.total} / {report.max_score} points "
          f"(graded in {report.duration} s, {isolation})")
    hidden = {t.id for c in report.components for t in c.checks if t.tier == Tier.HIDDEN}
    from grader.words import noted

    for note in map(noted, report.notes):  # a restart's reason may name a hidden check: left out
        if not any(check_id and check_id in note for check_id in hidden):
            print(f"  {note}")


def component(report: dict | None, name: str, *, points: float) -> float:
    """Print the public side of component `name` and return its score, in [0, points], 2 decimals."""
    # nbgrader scores any stderr as 0: whatever is written here goes to stdout
    with contextlib.redirect_stderr(sys.stdout), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = _typed(report)
        found = next((c for c in doc.report.components if c.name == name), None) if doc else None
        if doc is None or found is None:
            print(f"{name}: not graded (the first cell says why)")
            return 0.0
        for line in _describe(found, assignment=str(doc.report.assignment or "assignmentN"), reveal=doc.report.reveal,
                              student=doc.report.student):
            print(line)
        return clamp(found.score, points)


def performance(report: dict | None, *, points: float) -> float:
    """Print the performance tier's timings (grader.grading.performance) and return its score, as `component` does."""
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
                detail = f"{ratio}x" if entry.get("status") == Timing.MEASURED else _one_line(
                    entry.get("message") or entry.get("status"))
                print(f"  {entry.get('component')} ({entry.get('device')}): {detail}")
        return clamp(perf.get("score"), points)


def clamp(score: object, points: float) -> float:
    """A score nbgrader accepts as partial credit: a finite number in [0, points], 2 decimals; else 0."""
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return 0.0
    return max(0.0, min(round(float(score), 2), float(points)))


def describe(entry: dict, *, assignment: str = "assignmentN", reveal: Reveal = Reveal.FIX,
             student: bool = False) -> list[str]:
    """One component's public side (`entry`: its JSON, of a report at [feedback] `reveal`, a `student`'s copy or
    not): its diagnosis, its public checks by id, the most telling failed one in full (as the terminal report
    shows it), hidden ones only counted."""
    return _describe(from_json({"components": [entry]}).components[0], assignment=assignment, reveal=reveal,
                     student=student)


def _describe(c: ComponentResult, *, assignment: str, reveal: Reveal, student: bool) -> list[str]:
    from grader.words import sentence

    lines = [f"{c.name} ({c.file}): {c.score} / {c.max_score} points, {c.status}"]
    if c.status == ComponentStatus.NOT_ATTEMPTED:
        return [*lines, f"  every check reached a TODO: start with {c.file}"]
    # the diagnosis's sentence as the report's JSON says it (its "message"), worded again from its data: a
    # student's copy at reveal "bug" says the bug alone
    said = sentence(c.diagnosis, reveal, student)
    if said:
        lines.append(f"  Diagnosis: {_one_line(said, _VALUE_CHARS)}")
    failed = []
    for t in c.checks:
        if t.tier == Tier.HIDDEN:
            continue
        if t.outcome.status == Status.PASSED:
            lines.append(f"  passed   {t.id}")
        elif t.excused_by:
            parts = [str(p) for p in t.excused_by]
            verb = "fails" if len(parts) == 1 else "fail"
            lines.append(f"  excused  {t.id}: fails only because your {' and '.join(parts)} {verb} "
                         "(charged there)")
        elif t.waiting_on:  # a student's copy: its points count for now (grader.judging.scoring)
            on = [str(p) for p in t.waiting_on]
            lines.append(f"  waiting  {t.id}: runs through your {' and '.join(on)}, which "
                         + ("fails its own checks" if len(on) == 1 else "fail their own checks")
                         + "; its points count for now, and it is graded again once "
                         + ("that part passes" if len(on) == 1 else "they pass"))
        elif t.outcome.reason in NOT_COUNTED:
            lines.append(f"  skipped  {t.id}: {_one_line(t.outcome.message)}")
        else:
            failed.append(t)
            lines.append(f"  FAILED   {t.id}: {_one_line(t.outcome.message) or t.outcome.reason}")
    if failed:
        # one in full, as `grade` shows it without --verbose; a diagnosis says the cause, so no hint
        # the check grading chose with the bug table (the JSON's `telling`, grader.judging.telling), as `grade` shows
        chosen = next((t for t in failed if t.id == c.telling), None)
        lines += _details(chosen or _telling(c, failed), hint=not said)
        if len(failed) > 1:
            lines.append(f"  (`grade {assignment} --verbose` in this folder shows every failed check in full)")
    hidden = [t for t in c.checks if t.tier == Tier.HIDDEN and t.outcome.reason not in NOT_COUNTED]
    hidden_failed = sum(1 for t in hidden if t.outcome.status != Status.PASSED and not t.excused_by)
    if hidden_failed:
        lines.append(f"  {hidden_failed} hidden check{'s' * (hidden_failed != 1)} failed")
    elif hidden:
        lines.append(f"  hidden checks: all {len(hidden)} passed")
    for hit in c.forbidden:
        lines.append(f"  forbidden: {hit.what} at {hit.where} ({hit.how}): scores 0")
    return lines


def _telling(c: ComponentResult, failed: list[CheckResult]) -> CheckResult:
    """The failed check to show in full where the JSON names none (a report written before "telling"):
    ranked as grading ranks them (grader.judging.telling.best), without the bug table."""
    from grader.judging.telling import best

    chosen = best(replace(c, checks=failed), {})
    return next((t for t in failed if chosen is not None and t.id == chosen.id), failed[0])


def _details(t: CheckResult, *, hint: bool) -> list[str]:
    from grader.words import note

    rows = [("message", str(t.outcome.message or t.outcome.reason or ""))]
    if said := note(t.attribution):  # the JSON's "note", worded again from the attribution it was worded from
        rows.append(("parts", said))
    shown = t.outcome.details.shown()
    for key in _DETAILS:
        if key in shown and (hint or key != "hint"):
            value = shown[key]
            rows.append((key.replace("_", " "), f"{value:.3g}" if isinstance(value, float) else str(value)))
    if t.outcome.output:
        rows.append(("your output", str(t.outcome.output)))
    lines = [f"  {t.id}, in full:"]
    for key, text in rows:
        for i, line in enumerate(_elided(text)):
            lines.append(f"    {key if i == 0 else '':<15}{line}")
    return lines


def _elided(text: str) -> list[str]:
    """Printable lines, at most _ELIDE_LINES of them (a tensor's rows), the whole cut at _VALUE_CHARS."""
    text = text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS] + " ..."
    kept = ["".join(ch for ch in line if ch.isprintable()) for line in text.splitlines()] or [""]
    if len(kept) > _ELIDE_LINES:
        kept = [*kept[:_ELIDE_LINES], f"... ({len(kept) - _ELIDE_LINES} more lines: grade --verbose shows them)"]
    return kept


def _one_line(message: object, limit: int = _MESSAGE_CHARS) -> str:
    # plain text: control characters (ANSI escapes from a student's exception) are dropped
    text = " ".join(str(message or "").split())
    text = "".join(ch for ch in text if ch.isprintable())
    return text if len(text) <= limit else text[:limit - 3] + "..."
