"""`grade batch` into an OUT that holds an earlier run: changes.csv says what moved and why; overrides
(a regrade request granted) are applied after grading and last until removed; hostile student names
stay text in every file and in the terminal (grader.batch.regrade, grader.batch.safe)."""

import csv
import json
from pathlib import Path

from tests.kit.conftest import SOLUTIONS, mutant
from tests.kit.hostile_names import ESCAPES, FORMULAS, LONG, MARKUP
from tests.kit.sandbox.test_batch import LN_BUG, batch, copy_tree, read_csv


def cells(path: Path) -> list[str]:
    with open(path, newline="") as f:
        return [c for row in csv.reader(f) for c in row]


def test_a_regrade_writes_changes_and_overrides_survive_it(tmp_path, quick_course):
    """Two graded students (one named for a terminal and rich to act on) and hostile-named folders
    (empty: rows without grading); the second run adds an override, the third runs without
    --overrides (it is kept), a bad override is refused, the last run drops it."""
    root = tmp_path / "class"
    copy_tree(mutant(tmp_path / "m", LN_BUG) / "assignment1", root / "bob")
    marked = "~[bold red]zed\x1b[31m"  # graded last: the progress bar's last name
    copy_tree(SOLUTIONS / "assignment1", root / marked)
    hostile = FORMULAS[:4] + ESCAPES[:2] + MARKUP[1:2] + LONG[:2]
    for name in hostile:
        (root / name).mkdir()
    out = tmp_path / "out"
    args = (str(root), "--assignment", "assignment1", "--out", str(out), "--course", str(quick_course))
    first = batch(*args)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    assert not (out / "changes.csv").exists()
    for text in (first.stdout + first.stderr, (out / "summary.txt").read_text(), (out / "class.html").read_text(),
                 (out / "grades.csv").read_text()):
        assert "\x1b" not in text and "\x07" not in text
    assert "~[bold red]zed\\x1b[31m" in first.stdout  # the progress bar: text, not markup
    assert not [c for c in cells(out / "grades.csv") if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    reports = {json.loads(p.read_text())["batch"]["student"] for p in (out / "reports").glob("*.json")}
    assert reports == {"bob", marked, *hostile}  # each exact name kept inside its report
    assert len(read_csv(out / "grades.csv")) == 2 + len(hostile)
    # what the batch's worker rendered: an override's files are rendered again from the report's JSON
    graded_feedback = {ext: (out / "feedback" / f"bob.{ext}").read_text() for ext in ("txt", "html")}

    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,component,points,reason\nbob,LayerNorm,9,regrade request granted\n"
                         f'"{FORMULAS[0].replace(chr(34), chr(34) * 2)}",TokenEmbedding,6,=evil()\n')
    second = batch(*args, "--overrides", str(overrides))
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
    rows = read_csv(out / "grades.csv")
    assert (rows["bob"]["LayerNorm"], rows["bob"]["total"], rows["bob"]["overrides"]) == ("9", "39", "LayerNorm")
    changes = list(csv.DictReader(open(out / "changes.csv")))
    # why: "override" (and "suites" too, say, where the kit's files were edited between the two runs)
    assert {(r["student"], r["before"], r["after"], r["change"], r["components"], r["why"].split()[-1])
            for r in changes} == {("bob", "32.5", "39", "+6.5", "LayerNorm", "override"),
                                  ("'" + FORMULAS[0], "0", "6", "+6", "TokenEmbedding", "override")}
    assert "2 of 11 totals changed since the last run" in " ".join((out / "summary.txt").read_text().split())
    report = json.loads((out / "reports" / "bob.json").read_text())
    assert report["components"][0]["override"] == {"points": 9.0, "reason": "regrade request granted",
                                                   "graded": 2.5}
    assert json.loads((out / "gradescope" / "bob" / "results.json").read_text())["score"] == 39
    assert "regrade request granted" in (out / "feedback" / "bob.txt").read_text()
    assert "regrade request granted" in (out / "feedback" / "bob.html").read_text()
    assert "score       39 / 40" in (out / "feedback" / "bob.txt").read_text()  # the grade it now counts
    assert "bob" in (out / "class.html").read_text().split("Changes since the last run")[1]

    third = batch(*args)  # no --overrides: OUT's are kept
    assert read_csv(out / "grades.csv")["bob"]["total"] == "39"
    assert "0 of 11 totals changed" in " ".join(third.stdout.split())
    assert (out / "feedback" / "bob.txt").read_text().count("regrade request granted") == 1

    overrides.write_text("student,component,points,reason\nnobody,LayerNorm,9,x\n")
    refused = batch(*args, "--overrides", str(overrides))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1 and "'nobody'" in refused.stderr

    overrides.write_text("student,component,points,reason\n")
    batch(*args, "--overrides", str(overrides))
    assert read_csv(out / "grades.csv")["bob"]["total"] == "32.5"
    assert "regrade request granted" not in (out / "feedback" / "bob.txt").read_text()
    assert {ext: (out / "feedback" / f"bob.{ext}").read_text() for ext in ("txt", "html")} == graded_feedback
