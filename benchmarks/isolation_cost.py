"""What each isolation tier costs a grade, against the process tier (resource limits only).

    python benchmarks/isolation_cost.py [assignment1 ...] [--repeat 5]

For each assignment, `grade assignmentN --submission solutions` (both tiers, cold: a fresh grader
that starts a fresh worker, as a student's `grade` or Gradescope's run_autograder does) with
GRADER_ISOLATION set to each tier this machine allows, in turn within each round, so that a drift
of the machine's speed falls on every tier alike; then the warm grader's grade (the cost of each
submission of `grade batch`: a worker forked from a template, confined again each time). The
median of --repeat rounds for each, and its ratio to the process tier's, measured in the same run.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from grader.sandbox import isolation

ROOT = Path(__file__).resolve().parent.parent
WARM = """
import statistics, sys, time
from pathlib import Path
from grader import load_course
from grader.grading.warm import Grader
assignment, solutions, repeat = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
with Grader(load_course(Path("course.toml"))) as grader:
    spec = grader.course.assignment(assignment)
    grader.grade(assignment=spec, submission=solutions)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        grader.grade(assignment=spec, submission=solutions)
        times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def run(cmd: list[str], tier: str, *, reported: bool) -> float:
    """Seconds `cmd` takes with GRADER_ISOLATION=`tier`; `reported`: the last word it prints instead."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, isolation.ENV_VAR: tier})
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} with {isolation.ENV_VAR}={tier} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.split()[-1]) if reported else time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("assignments", nargs="*", default=["assignment1"])
    p.add_argument("--repeat", type=int, default=5, help="rounds; the median counts (default 5)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    tiers = ["process", *(["seccomp"] if "error" not in isolation.confinement() else []),
             *(["namespaces"] if not isolation.unavailable() else [])]
    console = Console()
    table = Table(title=f"grading the solutions, seconds and ratio to the process tier; median of {args.repeat} "
                        f"rounds (seccomp here: {isolation.describe('seccomp')})")
    table.add_column("assignment", no_wrap=True)
    table.add_column("grade", no_wrap=True)
    for tier in tiers:
        table.add_column(tier, justify="right")
    for assignment in args.assignments:
        commands = {"cold": [sys.executable, "-m", "grader", assignment, "--submission", str(ROOT / "solutions")],
                    "warm": [sys.executable, "-c", WARM, assignment, str(ROOT / "solutions"), "3"]}
        for kind, cmd in commands.items():
            times: dict[str, list[float]] = {tier: [] for tier in tiers}
            with console.status(f"{assignment}, {kind}, {args.repeat} rounds of {', '.join(tiers)}"):
                for _ in range(args.repeat):
                    for tier in tiers:
                        times[tier].append(run(cmd, tier, reported=kind == "warm"))
            base = statistics.median(times["process"])
            table.add_row(assignment, kind, *(f"{statistics.median(times[t]):.2f} "
                                              f"({statistics.median(times[t]) / base:.3f}x)" for t in tiers))
    console.print(table)


if __name__ == "__main__":
    main()
