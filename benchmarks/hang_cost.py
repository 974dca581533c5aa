"""What one infinite loop costs a student's `grade`: the solutions, then the same tree with
`make_pad_mask` looping forever (assignment2: make_tgt_mask calls it).

    python benchmarks/hang_cost.py [--runs 3]

Prints the median wall time of each, the hang's extra time less one timeout (the aim: a few
seconds; the timeout itself is course.toml's `timeout_seconds`), and `python -c "import torch"`
measured in the same run, the yardstick the other benchmarks use.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
MASKS = "assignment2/masks.py"
PAD = "    return (tokens != pad_idx)[:, None, None, :]  # (B, 1, 1, T)\n"


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    timeout = tomllib.loads((ROOT / "course.toml").read_text())["limits"]["timeout_seconds"]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"correct": Path(tmp) / "correct", "hang": Path(tmp) / "hang"}
        for tree in trees.values():
            shutil.copytree(ROOT / "solutions", tree, ignore=shutil.ignore_patterns("__pycache__"))
        path = trees["hang"] / MASKS
        text = path.read_text()
        assert PAD in text, f"the hang's anchor is not in {MASKS}"
        path.write_text(text.replace(PAD, "    while True:\n        pass\n" + PAD, 1))
        grade = [sys.executable, "-m", "grader", "assignment2", "--submission"]
        seconds: dict[str, list[float]] = {"import torch": [], "correct": [], "hang": []}
        for _ in range(args.runs):
            seconds["import torch"].append(timed([sys.executable, "-c", "import torch"]))
            for name, tree in trees.items():
                seconds[name].append(timed([*grade, str(tree)]))
    median = {name: statistics.median(s) for name, s in seconds.items()}
    table = Table(title=f"grade assignment2, median of {args.runs} (timeout_seconds = {timeout})")
    table.add_column("run")
    table.add_column("seconds", justify="right")
    table.add_column("x import torch", justify="right")
    for name, s in median.items():
        table.add_row(name, f"{s:.1f}", f"{s / median['import torch']:.1f}")
    extra = median["hang"] - median["correct"] - timeout
    table.add_row("hang - correct - timeout", f"{extra:.1f}", f"{extra / median['import torch']:.1f}")
    Console().print(table)


if __name__ == "__main__":
    main()
