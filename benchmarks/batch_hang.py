"""What one hanging student costs a class: `grade batch` on 12 correct trees, then on the same
class with one student's MultiHeadAttention.forward replaced by `while True: pass`.

    python benchmarks/batch_hang.py [--assignment assignment2] [--students 12] [--jobs 2]

Prints the wall time of each batch, the extra time the hang costs (the aim: about one timeout per
component of the hanging student, not one per check), and `python -c "import torch"` measured in
the same run, the yardstick the other benchmarks use; checks that the 11 others get the same
totals in both batches.
"""

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
HANG = ("assignment2/multi_head_attention.py", "        B, T_q, _ = q.shape", "        while True:\n            pass\n")


def make_class(folder: Path, students: int, hanging: bool) -> None:
    for i in range(students):
        tree = folder / f"student{i:02d}"
        shutil.copytree(ROOT / "solutions", tree, ignore=shutil.ignore_patterns("__pycache__"))
        if hanging and i == 0:
            path = tree / HANG[0]
            text = path.read_text()
            assert HANG[1] in text, f"the hang's anchor is not in {HANG[0]}"
            path.write_text(text.replace(HANG[1], HANG[2] + HANG[1], 1))


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def totals(out: Path) -> dict[str, str]:
    with open(out / "grades.csv", newline="") as f:
        return {row["student"]: row["total"] for row in csv.DictReader(f)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="assignment2")
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    torch_s = timed([sys.executable, "-c", "import torch"])
    seconds, grades = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for hanging in (False, True):
            name = "with the hang" if hanging else "without"
            folder, out = Path(tmp) / f"class-{hanging}", Path(tmp) / f"out-{hanging}"
            make_class(folder, args.students, hanging)
            seconds[name] = timed([sys.executable, "-m", "grader", "batch", str(folder), "--assignment",
                                   args.assignment, "--jobs", str(args.jobs), "--out", str(out)])
            grades[name] = totals(out)
    others = [s for s in grades["without"] if s != "student00"]
    same = all(grades["without"][s] == grades["with the hang"][s] for s in others)
    table = Table(title=f"grade batch, {args.students} students of {args.assignment}, --jobs {args.jobs}")
    for column in ("batch", "seconds", "ratio to import torch"):
        table.add_column(column, justify="right" if column != "batch" else "left")
    for name, s in seconds.items():
        table.add_row(name, f"{s:.1f}", f"{s / torch_s:.1f}x")
    table.add_row("import torch", f"{torch_s:.2f}", "1.0x")
    console = Console()
    console.print(table)
    console.print(f"The hang costs {seconds['with the hang'] - seconds['without']:.1f} s; the hanging student's "
                  f"total: {grades['with the hang']['student00']} (without the hang "
                  f"{grades['without']['student00']}); the other {len(others)} students' totals are "
                  f"{'the same' if same else 'DIFFERENT'} in both batches.")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
