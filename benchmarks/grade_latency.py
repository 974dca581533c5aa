"""How long a student waits for `grade`, against the time Python takes to import torch.

    python benchmarks/grade_latency.py [assignment1 ...] [--repeat 3]

For each assignment, `grade assignmentN --submission solutions` is timed twice:
- both tiers: the instructors' run, with the hidden suites and the live reference;
- public only: what students have, a course whose suites folder has no hidden/ and whose
  reference folder does not exist (a copy of the kit's course.toml and tests/grading
  without hidden/, in a temporary folder).
Both are compared with `python -c "import torch"`, measured in the same run on the same
machine (median of --repeat runs each), so the ratio travels between machines where the
seconds do not. The aim is a ratio of 2.0 or less for assignment1.
"""

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


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
        table = Table(title=f"grade ASSIGNMENT --submission solutions (median of {args.repeat})")
        table.add_column("assignment")
        table.add_column("import torch (s)", justify="right")
        table.add_column("both tiers (s)", justify="right")
        table.add_column("ratio", justify="right")
        table.add_column("public only (s)", justify="right")
        table.add_column("ratio", justify="right")
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
            table.add_row(assignment, f"{baseline:.2f}", f"{both:.2f}", f"{both / baseline:.2f}",
                          f"{public:.2f}", f"{public / baseline:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
