"""How fast a class is graded: `grade batch` against nbgrader's own autograde, on the same submissions.

    python benchmarks/batch_throughput.py [--students 40] [--assignment assignment1]

Builds an nbgrader course (`grade nbgrader`, `nbgrader generate_assignment`) and a class of
submissions in its `submitted/` folder, a mix of correct and broken trees (every fourth has
a LayerNorm bug, every fourth a syntax error, every eighth a component left as the stub),
then times, in one run on one machine:
- `nbgrader autograde` on the class (one kernel per student, each running `grade`);
- `grade batch` on the same folder with --jobs 1 and with --jobs 2;
- `python -c "import torch"`, the yardstick the other benchmarks use.
It prints the seconds, the throughput ratio of `grade batch` to nbgrader's autograde (the aim:
3x or more) and the speed-up from 1 to 2 jobs (the aim: 1.6x or more), and checks that both
ways give every student the same total.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
PATCHES = {  # kind -> (file, old, new); "" is a correct tree
    "layer_norm_bug": ("layer_norm.py", "unbiased=False", "unbiased=True"),
    "syntax_error": ("feed_forward.py", "class PositionwiseFeedForward", "class PositionwiseFeedForward(:"),
}


def kind(i: int) -> str:
    if i % 8 == 7:
        return "stub"
    return {1: "layer_norm_bug", 2: "syntax_error"}.get(i % 4, "correct")


def build_class(submitted: Path, assignment: str, students: int) -> None:
    for i in range(students):
        tree = submitted / f"student{i:03d}" / assignment
        for a in sorted((ROOT / "solutions").glob("assignment*")):
            if a.name <= assignment:
                shutil.copytree(a, tree / a.name, ignore=shutil.ignore_patterns("__pycache__"))
        what = kind(i)
        if what == "stub":
            stub = ROOT / "assignments" / "assignment1" / "embedding.py"
            shutil.copyfile(stub, tree / "assignment1" / "embedding.py")
        elif what in PATCHES:
            name, old, new = PATCHES[what]
            path = tree / "assignment1" / name
            text = path.read_text()
            assert text.count(old) == 1, (name, old)
            path.write_text(text.replace(old, new))


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    return seconds


def totals_from_batch(path: Path) -> dict[str, float]:
    with open(path) as f:
        return {row["student"]: float(row["total"]) for row in csv.DictReader(f)}


def totals_from_nbgrader(course: Path, assignment: str, env: dict) -> dict[str, float]:
    """Each student's total in nbgrader's gradebook (read in a child: nbgrader is the kit's extra)."""
    code = ("import json\nfrom nbgrader.api import Gradebook\n"
            "gb = Gradebook('sqlite:///gradebook.db')\n"
            f"print(json.dumps({{s.student_id: s.score for s in gb.assignment_submissions({assignment!r})}}))\n"
            "gb.close()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=course, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--assignment", default="assignment1")
    args = p.parse_args()
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "NO_COLOR": "1"}
    grade = [sys.executable, "-m", "grader"]
    work = Path(tempfile.mkdtemp(prefix="batch-throughput-"))
    try:
        course = work / "nbgrader"
        timed([*grade, "nbgrader", str(course), "--assignment", args.assignment,
               "--course", str(ROOT / "course.toml")], ROOT, env)
        timed(["nbgrader", "generate_assignment", args.assignment, "--force"], course, env)
        build_class(course / "submitted", args.assignment, args.students)
        timed([*grade, "nbgrader", "prepare", str(course), "--assignment", args.assignment], ROOT, env)
        torch_s = timed([sys.executable, "-c", "import torch"], ROOT, env)
        nbgrader_s = timed(["nbgrader", "autograde", args.assignment], course, env)
        batch_s = {}
        for jobs in (1, 2):
            out = work / f"batch{jobs}"
            batch_s[jobs] = timed([*grade, "batch", str(course), "--assignment", args.assignment, "--jobs",
                                   str(jobs), "--out", str(out), "--course", str(ROOT / "course.toml")], ROOT, env)
        ours, theirs = totals_from_batch(work / "batch1" / "grades.csv"), totals_from_nbgrader(course, args.assignment,
                                                                                             env)
        differ = {s: (ours.get(s), theirs.get(s)) for s in ours.keys() | theirs.keys()
                  if ours.get(s) is None or theirs.get(s) is None or abs(ours[s] - theirs[s]) > 0.011}
        assert totals_from_batch(work / "batch2" / "grades.csv") == ours
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n = args.students
    table = Table(title=f"{n} submissions of {args.assignment}")
    table.add_column("run")
    table.add_column("seconds", justify="right")
    table.add_column("per submission", justify="right")
    table.add_column("÷ import torch", justify="right")
    table.add_row("python -c 'import torch'", f"{torch_s:.2f}", "", "1.00")
    table.add_row("nbgrader autograde", f"{nbgrader_s:.1f}", f"{nbgrader_s / n:.2f}", f"{nbgrader_s / n / torch_s:.2f}")
    for jobs, s in batch_s.items():
        table.add_row(f"grade batch --jobs {jobs}", f"{s:.1f}", f"{s / n:.2f}", f"{s / n / torch_s:.2f}")
    console = Console()
    console.print(table)
    console.print(f"throughput, grade batch vs nbgrader autograde: {nbgrader_s / batch_s[1]:.2f}x with 1 job, "
                  f"{nbgrader_s / batch_s[2]:.2f}x with 2 (aim: 3x)")
    console.print(f"speed-up from 1 to 2 jobs: {batch_s[1] / batch_s[2]:.2f}x (aim: 1.6x) on {os.cpu_count()} cores")
    console.print("same totals both ways: " + ("yes" if not differ else f"NO, differing: {differ}"))


if __name__ == "__main__":
    main()
