"""What run_autograder starts in Gradescope's container, once per submission.

    python -I -m grader.gradescope.runner --root /autograder --assignment assignmentN

It grades ROOT/submission with the course unpacked at ROOT/source/course (both tiers) and
writes ROOT/results/results.json, last, whole and in place of anything there (a submission
that wrote one itself is overwritten). The submission is taken in the shapes students upload
(grader.batch.collect, as `grade batch` takes a student's folder): the assignment's files
loose, a tree of assignmentN/ folders (in one wrapping folder or not, or in the `assignments/`
folder of a checkout of the student kit, a GitHub repository), or one .zip of any of those. A
symbolic link where grading would read refuses the submission. Untrusted code runs in the
highest isolation tier the container allows (grader.sandbox.isolation: in Gradescope's, whose
Docker profile refuses namespaces, the seccomp tier, the course unreadable to the submission's
user) and in the process tier only where the zip was built with --unsafe-process-isolation;
results.json says which tier the run had and what it blocks.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from grader.batch import collect
from grader.batch.outputs import empty_report, write_atomic
from grader.course import Course
from grader.course_table import ConfigError
from grader.gradescope.results import results

KIT_FOLDER = "assignments"  # where a checkout of the student kit (`grade release`) keeps the tree


def run(*, root: Path, assignment: str, unsafe_process_isolation: bool = False) -> dict:
    """Grade ROOT/submission and write ROOT/results/results.json; return what was written."""
    from grader.course import load as load_course
    from grader.sandbox import isolation

    started = time.monotonic()
    if os.geteuid() == 0:  # the course, the kit's zip and the scripts: no other user's (setup.sh does it too)
        os.chmod(root / "source", 0o700)
    course = load_course(root / "source" / "course" / "course.toml")
    spec = course.assignment(assignment)
    mode = isolation.choose(course.limits)
    work = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        exposed = isolation.protects_course(mode, [course.reference, course.suites])
        if exposed and not unsafe_process_isolation:
            why = isolation.unavailable() or "isolation is set to process"
            report = empty_report(spec, "submission", "not graded", "Not graded: this autograder grades only "
                                  "where the submission cannot read the course, and here "
                                  f"{exposed} (namespaces: {why}; seccomp: "
                                  f"{isolation.confinement().get('error', 'available')}). The instructor can "
                                  "build it with --unsafe-process-isolation.")
            data = results(report, execution_time=time.monotonic() - started)
        else:
            data = _grade(course, assignment, root / "submission", work, started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_atomic(root / "results" / "results.json", json.dumps(data, indent=2) + "\n")
    return data


def _grade(course: Course, assignment: str, submission: Path, work: Path, started: float) -> dict:
    from grader.grading.warm import Grader
    from grader.results import to_json

    spec = course.assignment(assignment)
    entry = collect.prepare(_source(submission, course, work), course=course, assignment=assignment,
                            work=work / "prepared")
    if entry.tree is None:
        report = empty_report(spec, "submission", entry.problem, f"Not graded ({entry.problem}): {entry.message}")
        return results(report, execution_time=time.monotonic() - started)
    with Grader(course, template=False) as grader:  # one grade: a fresh worker is the quicker start
        report = to_json(grader.grade(assignment=spec, submission=entry.tree))
    return results(report, execution_time=time.monotonic() - started)


def _source(submission: Path, course: Course, work: Path) -> Path:
    """What collect.prepare takes for this upload: the `assignments/` folder of the student kit
    where the upload is a repository of it (checked out, or zipped as GitHub downloads are), else
    the one .zip uploaded alone, else the submission folder itself. Links and bad zips are left
    for prepare to refuse or report."""
    inside = _visible(submission)
    folder = submission
    if len(inside) == 1 and inside[0].suffix.lower() == ".zip" and inside[0].is_file() \
            and not inside[0].is_symlink():
        try:
            folder = collect.unzip(inside[0], work / "unzipped")
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError):
            return inside[0]
    try:
        top = collect.skip_wrappers(folder, set(course.assignments))
    except collect.LinkFound:
        return folder
    kit = top / KIT_FOLDER
    if not kit.is_symlink() and kit.is_dir() and not any(p.name in course.assignments for p in _visible(top)) \
            and any((kit / a).is_dir() for a in course.assignments):
        return kit
    return folder


def _visible(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name not in collect.IGNORED and not p.name.startswith(".")]


def main(argv: list[str] | None = None) -> int:
    from grader.grading.suites import keep_hypothesis_out_of_cwd
    from grader.usage import UsageParser

    p = UsageParser(prog="run_autograder", description="Grade a Gradescope submission into results.json.")
    p.add_argument("--root", default="/autograder", help="Gradescope's folder (default /autograder)")
    p.add_argument("--assignment", required=True)
    p.add_argument("--unsafe-process-isolation", action="store_true")
    args = p.parse_args(argv)
    keep_hypothesis_out_of_cwd()
    root = Path(args.root)
    try:
        data = run(root=root, assignment=args.assignment, unsafe_process_isolation=args.unsafe_process_isolation)
    except ConfigError as e:
        _failed(root, f"the autograder is misconfigured: {e}")
        return 2
    except Exception as e:  # the grader's own trouble: say so where the instructor looks
        traceback.print_exc()
        _failed(root, f"the autograder failed: {type(e).__name__}: {e}")
        return 1
    print(data["output"])
    return 0


def _failed(root: Path, message: str) -> None:
    print(message, file=sys.stderr)
    write_atomic(root / "results" / "results.json",
                 json.dumps({"score": 0, "output": message, "visibility": "visible", "tests": []}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
