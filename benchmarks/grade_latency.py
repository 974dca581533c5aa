"""How long a student waits for `grade`, against the time Python takes to import torch.

    python benchmarks/grade_latency.py [assignment1 ...] [--repeat 3]

For each assignment, grading the solutions is timed
- cold, both tiers: `grade assignmentN --submission solutions`, the instructors' run, with the
  hidden suites and the live reference;
- cold, public only: the same command as students have it, a course whose suites folder has
  no hidden/ and whose reference folder does not exist (a copy of the kit's course.toml and
  tests/grading without hidden/, in a temporary folder);
- warm, both tiers and public only: a grade on a warm grader (grader.grading.warm.Grader) that has
  graded once already, the cost of each grade of `grade batch` and of the kit's own tests;
- watch: `grade assignmentN --watch` on the public course, from the save of a graded file to
  the line that says the re-grade is done (what a student waits for after each edit). The first
  save comes READING seconds after the first grade, the time a student takes to read it, in which
  its helper grader (grader.grading.split, on a machine with two cores or more) warms up. Each round of
  --repeat saves each of the assignment's files once, in turn (a save re-runs the components that
  can run that file, grader.grading.reuse): the column is the median of all saves, and the line under
  the table gives each file's.
Each is compared with `python -c "import torch"`, measured in the same run on the same
machine (median of --repeat runs each), so the ratio travels between machines where the
seconds do not.
"""

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from grader import load_course

ROOT = Path(__file__).resolve().parent.parent
READING = 10.0  # seconds between the first grade of `--watch` and the first save


def median_time(cmd: list[str], repeat: int, cwd: Path = ROOT) -> float:
    """Median wall time of `cmd` over `repeat` runs; a failing run stops the benchmark with its output."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} (in {cwd}) exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return statistics.median(times)


def public_course(folder: Path) -> Path:
    """A student's copy of the course in `folder`: the public suites only, no reference solutions."""
    suites = folder / "tests" / "grading"
    shutil.copytree(ROOT / "tests" / "grading", suites,
                    ignore=shutil.ignore_patterns("hidden", "__pycache__"))
    for name in ("__init__.py", "strategies.py"):
        shutil.copyfile(ROOT / "tests" / name, folder / "tests" / name)
    text = (ROOT / "course.toml").read_text()
    folders = {"reference": folder / "no-solutions", "assignments": ROOT / "assignments", "suites": suites}
    for key, path in folders.items():
        text, n = re.subn(rf'^{key} = "[^"]*"', f'{key} = "{path}"', text, count=1, flags=re.M)
        if n != 1:
            sys.exit(f"course.toml: no top-level `{key} = \"...\"` line to point at {path}")
    course = folder / "course.toml"
    course.write_text(text)
    return course


def hidden_checks_ran(report: Path) -> bool | None:
    """Whether a JSON report shows hidden checks that were run (None: the report's shape is not known)."""
    try:
        tests = [t for c in json.loads(report.read_text())["components"] for t in c["tests"]]
        return not any(t.get("reason") == "unavailable" for t in tests)
    except (OSError, ValueError, KeyError, TypeError):
        return None


WARM = """
import json, statistics, sys, time
from grader import load_course
from grader.grading.warm import Grader
assignment, submission, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Grader(load_course(sys.argv[4])) as grader:
    spec = grader.course.assignment(assignment)
    grader.grade(assignment=spec, submission=submission)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        grader.grade(assignment=spec, submission=submission)
        times.append(time.perf_counter() - start)
print(json.dumps(statistics.median(times)))
"""


def warm_time(assignment: str, course: Path, repeat: int) -> float:
    """Median seconds of a grade on a warm grader, after one grade that warms it."""
    # from the course's folder, so that its `tests` package is the one imported
    proc = subprocess.run([sys.executable, "-c", WARM, assignment, str(ROOT / "solutions"), str(repeat), str(course)],
                          cwd=course.parent, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the warm grader failed on {assignment}:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.split()[-1])


def watch_time(assignment: str, course: Path, folder: Path, repeat: int) -> tuple[float, dict[str, float]]:
    """Median seconds from saving a graded file to `grade --watch` saying its re-grade is done, over
    all saves and by file."""
    tree = folder / f"watched-{assignment}"
    shutil.copytree(ROOT / "solutions", tree, ignore=shutil.ignore_patterns("__pycache__"))
    files = load_course(course).assignment(assignment).files
    proc = subprocess.Popen([sys.executable, "-m", "grader", assignment, "--submission", str(tree), "--course",
                             str(course), "--watch"], cwd=course.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "NO_COLOR": "1", "TERM": "dumb"})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or ()], daemon=True).start()

    def graded(n: int) -> None:
        while not lines.get(timeout=600).startswith(f"grade {n} at"):
            pass

    try:
        graded(1)
        time.sleep(READING)
        times: dict[str, list[float]] = {name: [] for name in files}
        for i in range(repeat * len(files)):
            name = files[i % len(files)]
            start = time.perf_counter()
            with (tree / assignment / name).open("a") as f:
                f.write(f"x_{i} = {i}  # a save that changes the code\n")
            graded(i + 2)
            times[name].append(time.perf_counter() - start)
    except queue.Empty:
        sys.exit(f"grade --watch on {assignment} did not re-grade within 600 s")
    finally:
        proc.kill()
        proc.wait()
    return statistics.median([t for each in times.values() for t in each]), \
        {name: statistics.median(each) for name, each in times.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("assignments", nargs="*", default=["assignment1"])
    p.add_argument("--repeat", type=int, default=3, help="runs of each command; the median counts (default 3)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    console = Console()
    solutions = str(ROOT / "solutions")
    with tempfile.TemporaryDirectory(prefix="grade-latency-") as tmp:
        folder = Path(tmp)
        course = public_course(folder / "public")
        with console.status(f"python -c 'import torch' x {args.repeat}"):
            baseline = median_time([sys.executable, "-c", "import torch"], args.repeat)
        table = Table(title=f"grading the solutions, seconds and ratio to import torch ({baseline:.2f} s); "
                            f"median of {args.repeat}")
        table.add_column("assignment", no_wrap=True)
        for column in ("cold, both", "cold, public", "warm, both", "warm, public", "watch, public"):
            table.add_column(column, justify="right")
        by_file: dict[str, dict[str, float]] = {}
        for assignment in args.assignments:
            grade = [sys.executable, "-m", "grader", assignment, "--submission", solutions]
            both_json, public_json = folder / f"{assignment}-both.json", folder / f"{assignment}-public.json"
            with console.status(f"grade {assignment}, both tiers x {args.repeat}"):
                both = median_time([*grade, "--json", str(both_json)], args.repeat)
            with console.status(f"grade {assignment}, public only x {args.repeat}"):
                # run from the student's folder, so that its `tests` package is the one imported
                public = median_time([*grade, "--course", str(course), "--json", str(public_json)], args.repeat,
                                     cwd=course.parent)
            if hidden_checks_ran(public_json) or hidden_checks_ran(both_json) is False:
                sys.exit(f"{assignment}: the public-only run graded hidden checks, or the other did not")
            with console.status(f"warm grader, {assignment} x {args.repeat}, both tiers and public only"):
                warm_both = warm_time(assignment, ROOT / "course.toml", args.repeat)
                warm_public = warm_time(assignment, course, args.repeat)
            with console.status(f"grade {assignment} --watch, {args.repeat} saves of each file"):
                watch, by_file[assignment] = watch_time(assignment, course, folder, args.repeat)
            table.add_row(assignment, *(f"{t:.2f} ({t / baseline:.2f}x)"
                                        for t in (both, public, warm_both, warm_public, watch)))
    console.print(table)
    for assignment, times in by_file.items():
        console.print(f"watch, {assignment}, by the file saved: " +
                      ", ".join(f"{name} {t:.2f} ({t / baseline:.2f}x)" for name, t in times.items()))


if __name__ == "__main__":
    main()
