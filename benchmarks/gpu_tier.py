"""How long the GPU tier takes: `grade assignmentN --device cuda` against the same run without it.

    python benchmarks/gpu_tier.py [assignment2 ...] [--repeat 3] [--submission DIR]

For each assignment, the solutions (or DIR) are graded with both tiers, with and without
`--device cuda`, and the table shows the median seconds of each, the GPU checks' own time (the
JSON's `gpu.seconds`: the sum of their durations), how many of them passed, and the performance
ratios measured on the GPU (yours / torch's built-in). On a machine without a CUDA device it
says so and exits 0: there the GPU checks are only reported skipped.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


def grade(assignment: str, submission: str, out: Path, *extra: str) -> tuple[float, dict]:
    """(wall seconds, the JSON report) of one `grade` run; a failing run stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "grader", assignment, "--submission", submission, "--json", str(out),
                           *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"grade {assignment} {' '.join(extra)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(out.read_text())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("assignments", nargs="*", default=["assignment1", "assignment2", "assignment3", "assignment4"])
    p.add_argument("--repeat", type=int, default=3, help="runs of each command; the median counts (default 3)")
    p.add_argument("--submission", default=str(ROOT / "solutions"), help="the tree to grade (default: solutions)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    import torch

    console = Console()
    if not torch.cuda.is_available():
        console.print("No CUDA device here: `--device cuda` reports the GPU checks skipped. Nothing to time.")
        return
    table = Table(title=f"grade ASSIGNMENT --submission {Path(args.submission).name} on "
                        f"{torch.cuda.get_device_name(0)} (median of {args.repeat})")
    table.add_column("assignment")
    for name in ("cpu (s)", "--device cuda (s)", "GPU checks (s)", "passed", "score", "time/torch on GPU"):
        table.add_column(name, justify="right")
    with tempfile.TemporaryDirectory(prefix="gpu-tier-") as tmp:
        out = Path(tmp) / "report.json"
        for assignment in args.assignments:
            with console.status(f"{assignment} x {args.repeat}, with and without --device cuda"):
                plain = [grade(assignment, args.submission, out)[0] for _ in range(args.repeat)]
                runs = [grade(assignment, args.submission, out, "--device", "cuda") for _ in range(args.repeat)]
            report = runs[-1][1]
            gpu = [t for c in report["components"] for t in c["tests"] if t["tier"] == "cuda"]
            ratios = [f"{e['component'][:12]} {e['time_vs_torch']:.2f}x"
                      for e in (report.get("performance") or {}).get("entries", [])
                      if e["device"] != "cpu" and e.get("time_vs_torch") is not None]
            table.add_row(assignment, f"{statistics.median(plain):.2f}",
                          f"{statistics.median(s for s, _ in runs):.2f}",
                          f"{statistics.median(r['gpu']['seconds'] for _, r in runs):.2f}",
                          f"{sum(t['status'] == 'passed' for t in gpu)} / {len(gpu)}",
                          f"{report['score']:g} / {report['max_score']:g}", "\n".join(ratios) or "-")
    console.print(table)


if __name__ == "__main__":
    main()
