"""How long a student waits for `grade`, against the time Python takes to import torch.

    python benchmarks/grade_latency.py [assignment1 ...] [--repeat 3]

Both are measured in this run on this machine, so the ratio travels between machines
where the seconds do not. The aim is a ratio of 2.0 or less for assignment1.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_of(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("assignments", nargs="*", default=["assignment1"])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    baseline = best_of([sys.executable, "-c", "import torch"], args.repeat)
    print(f"python -c 'import torch': {baseline:.2f} s (median of {args.repeat})")
    for assignment in args.assignments:
        t = best_of([sys.executable, "-m", "grader", assignment, "--submission", "solutions"], args.repeat)
        print(f"grade {assignment} --submission solutions: {t:.2f} s  ratio {t / baseline:.2f}")


if __name__ == "__main__":
    main()
