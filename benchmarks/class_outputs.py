"""How a batch's class outputs grow with the class: 250, 1,000 and 10,000 graded reports (issue 54).

    python benchmarks/class_outputs.py [--sizes 250 1000 10000] [--changed 0.05]

Each class is generated from the real graded reports of assignment1 in tests/kit/golden_record.json
(the solutions and the classic bugs of the course's table): every student a component by component
mix of them (most components the solution's, the others one of the table's bugs, a few with a
further check failed and fewer points), 1% with a worker fault (a check timed out), 0.5% with no
submission (status empty), 0.5% with a component held for review (os.fork flagged), each row with
the `batch` record grade batch keeps (student, source, key, digests, lms_id, status, message) and a
feedback page in OUT for class.html to link. The earlier run's records are there too (a run again
after a change of the suites: `--changed` of the totals differ), so changes.csv is written.

For each size, in a fresh process (its peak memory its own), it times what grade batch does for the
class once every submission is graded, into a temporary OUT: `Run.close` itself (grader/batch/run.py:
the rows with their overrides, grades.csv, summary.summarise, changes.csv) and then what
grader/commands/batch.py's main does with the batch (the same calls: summary.txt rendered by rich at
80 columns, summary.json, html.write_class's class.html, the summary printed to the terminal, here a
buffer). It prints the seconds, the CPU seconds, the peak memory (ru_maxrss, the generated rows
included: the run holds them too), the memory the rows alone took (the class's records and the
earlier run's, before any output is written), the slowest step, and the growth
per size step (CPU time ratio over size ratio, which a machine busy with other work does not skew as
it does the seconds). No thresholds: issue 54's bar is 10,000 reports in under a minute and 2 GB.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ASSIGNMENT = "assignment1"
FIRST = ["ada", "bo", "chen", "dana", "eli", "fatima", "gus", "hana", "ivan", "jo", "kofi", "lea", "miguel", "noor",
         "olu", "priya", "quinn", "rosa", "sven", "tariq", "una", "vik", "wen", "xavier", "yara", "zoé"]
LAST = ["smith", "nguyen", "müller", "okafor", "garcía", "kowalski", "tanaka", "haddad", "o'brien", "silva"]


def templates() -> list[dict]:
    """assignment1's graded reports in the golden record: the solution's first, then each bug's."""
    record = json.loads((ROOT / "tests" / "kit" / "golden_record.json").read_text())
    found = [e["json"] for name, e in sorted(record.items(), key=lambda kv: not kv[0].startswith("solutions/"))
             if e["assignment"] == ASSIGNMENT]
    return [json.loads(r) if isinstance(r, str) else r for r in found]


def generate(n: int, digests: dict[str, str], changed: float) -> tuple[dict[str, dict], dict[str, dict]]:
    """(records, before): student -> report with its "batch" record, as the run holds them, and the
    records the earlier run left in OUT."""
    from grader.batch import outputs

    reports = templates()
    solution = reports[0]
    # each component's versions: the solution's, then each bug's (the one the bug's report differs in)
    versions = {c["name"]: [c] for c in solution["components"]}
    for r in reports[1:]:
        for c, ok in zip(r["components"], solution["components"], strict=True):
            if c != ok:
                versions[c["name"]].append({**c, "start_here": r.get("start_here")})
    rng = random.Random(n)
    spec = _spec()
    records, before = {}, {}
    for i in range(n):
        student = f"{rng.choice(FIRST)} {rng.choice(LAST)} {i:05d}" if i % 7 == 0 else \
            f"{rng.choice(FIRST)}_{rng.choice(LAST)}_{i:05d}"
        roll = rng.random()
        if roll < 0.005:
            report = outputs.empty_report(spec, f"/submissions/{student}", "empty", "no files for assignment1")
            status, message = "empty", "no files for assignment1"
        else:
            report = _graded(solution, versions, rng, fault=roll < 0.015, held=0.015 <= roll < 0.02)
            report["submission"] = f"/submissions/{student}"
            status, message = outputs.status_of(report), ""
        report["batch"] = {"student": student, "source": report["submission"], "key": f"{rng.getrandbits(256):064x}",
                           "digests": {"submission": f"{rng.getrandbits(256):064x}", **digests},
                           "lms_id": str(100000 + i), "status": status, "message": message}
        records[student] = report
        earlier = _clone(report)
        if rng.random() < changed and earlier["components"]:
            c = rng.choice(earlier["components"])
            c["score"] = max(0.0, c["score"] - 1.0)
            earlier["score"] = round(sum(c["score"] for c in earlier["components"]), 4)
            earlier["batch"]["digests"] = {**earlier["batch"]["digests"], "suites": "0" * 64}
        before[student] = earlier
    return records, before


def _clone(value):
    """A copy of its own, as a report read back from OUT is (json: faster than copy.deepcopy)."""
    return json.loads(json.dumps(value))


def _spec():
    from grader import load_course

    return load_course(ROOT / "course.toml").assignment(ASSIGNMENT)


def _graded(solution: dict, versions: dict[str, list[dict]], rng: random.Random, *, fault: bool, held: bool) -> dict:
    components = []
    start_here = None
    for choices in versions.values():
        c = _clone(choices[0] if rng.random() < 0.8 or len(choices) == 1 else rng.choice(choices[1:]))
        start_here = start_here or c.pop("start_here", None)
        c.pop("start_here", None)
        public = [t for t in c["tests"] if t["status"] == "passed" and not t["hidden"]]
        if public and rng.random() < 0.1:  # a further check failed: fewer points
            t = rng.choice(public)
            t.update(status="failed", reason="mismatch", message=f"{t['id']}: max abs diff {rng.random():.3g}")
            c["score"] = round(c["score"] * rng.choice((0.5, 0.75)), 2)
            c["status"] = "partial"
        components.append(c)
    if fault:
        c = rng.choice(components)
        t = rng.choice(c["tests"])
        t.update(status="failed", reason="timeout", message="the check took longer than 10 s")
    if held:
        c = components[0]
        c["held"], c["score"] = c["score"], 0.0
        c["flagged"] = [{"what": "os.fork", "where": "assignment1/layer_norm.py:12"}]
    score = round(sum(c["score"] for c in components), 4)
    return {**_clone({k: v for k, v in solution.items() if k != "components"}), "components": components,
            "score": score, "start_here": start_here, "duration_seconds": round(rng.uniform(20, 90), 2)}


def one(n: int, changed: float) -> dict:
    from grader import load_course
    from grader.batch import html, outputs, regrade, summary
    from grader.batch import run as batch_run

    course = load_course(ROOT / "course.toml")
    records, before = generate(n, regrade.course_digests(course), changed)
    rows_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    with tempfile.TemporaryDirectory(prefix="class-outputs-") as tmp:
        out = Path(tmp)
        (out / "feedback").mkdir()
        for student, r in records.items():
            if r["batch"]["status"] != "empty":
                (out / "feedback" / f"{outputs.safe_name(student)}.html").write_text("<html></html>\n")
        run = batch_run._Run(course, ASSIGNMENT, out, batch_run.Options(similar=None), {})
        run.records, run.before = records, before
        steps: dict[str, float] = {}
        cpu, start = _cpu(), time.perf_counter()
        mark = start
        run.close({})  # grades.csv, summary.summarise, changes.csv
        mark = _step(steps, "close", mark)
        batch = run.batch
        # what grader/commands/batch.py's main does with the batch, call for call
        recorder = Console(width=80, record=True, file=io.StringIO(), color_system=None)
        recorder.print(summary.render(batch.summary))
        (out / "summary.txt").write_text(recorder.export_text())
        mark = _step(steps, "summary.txt", mark)
        (out / "summary.json").write_text(json.dumps(batch.summary, indent=2) + "\n")
        mark = _step(steps, "summary.json", mark)
        html.write_class(out, batch.summary, batch.rows)
        mark = _step(steps, "class.html", mark)
        console = Console(width=100, file=io.StringIO())
        console.print(summary.render(batch.summary))
        if batch.changes is not None:
            console.print(f"{summary.changed_line(batch.summary)}: {out / 'changes.csv'}")
        _step(steps, "terminal", mark)
        seconds, cpu = time.perf_counter() - start, _cpu() - cpu
        sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    slowest = max(steps, key=lambda s: steps[s])
    return {"n": n, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "peak_mib": peak,
            "rows_mib": rows_mib, "steps": steps, "slowest": slowest, "changes": len(batch.changes or []),
            "bytes": sizes}


def _step(steps: dict[str, float], name: str, mark: float) -> float:
    now = time.perf_counter()
    steps[name] = round(now - mark, 2)
    return now


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 10000])
    parser.add_argument("--changed", type=float, default=0.05, help="share of totals the earlier run had otherwise")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a size, in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.changed)))
        return
    console = Console(width=max(Console().width, 100))  # the table's columns unbroken, piped too
    rows = []
    for n in args.sizes:
        run = subprocess.run([sys.executable, __file__, "--one", str(n), "--changed", str(args.changed)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(run.stdout.splitlines()[-1]))
        console.print(rows[-1])
    table = Table(title=f"class outputs of a generated class ({ASSIGNMENT})")
    for column in ("students", "seconds", "CPU s", "peak MiB", "rows MiB", "slowest step", "CPU ratio / size ratio"):
        table.add_column(column, justify="right", no_wrap=True)
    for before, row in zip([None, *rows], rows, strict=False):
        growth = (f"{row['cpu_seconds'] / before['cpu_seconds']:.1f} / {row['n'] / before['n']:g}"
                  if before and before["n"] < row["n"] else "")
        slowest = f"{row['slowest']} {row['steps'][row['slowest']]:.1f} s"
        table.add_row(str(row["n"]), f"{row['seconds']:.1f}", f"{row['cpu_seconds']:.1f}", str(row["peak_mib"]),
                      str(row["rows_mib"]), slowest, growth)
    console.print(table)


if __name__ == "__main__":
    main()
