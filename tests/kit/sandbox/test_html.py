"""`grade batch`'s HTML (grader.batch.html): class.html and feedback/STUDENT.html from a real batch
(conftest.graded), read as text: a student's page holds the feedback text and no hidden check, the class
page shows the similar pairs, and without matplotlib it keeps its tables and says so (opened in headless
Chromium: tests/kit/browser/test_html.py)."""

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.sandbox.test_batch import hidden_ids

# the graded class, graded once on one worker
pytestmark = [pytest.mark.xdist_group("batch_class"), pytest.mark.needs("chromium")]


def test_a_students_page_holds_the_feedback_text_and_no_hidden_check(graded):
    out, _ = graded
    hidden = hidden_ids()
    pages = list((out / "feedback").glob("*.html"))
    assert len(pages) == len(list((out / "feedback").glob("*.txt"))) >= 8
    for page in pages:
        text = page.read_text()
        report = re.search(r'<pre class="report">(.*?)</pre>\s*</body>', text, re.S)
        assert report, page
        shown = html.unescape(re.sub(r"<[^>]+>", "", report.group(1)))
        assert shown.split() == page.with_suffix(".txt").read_text().split(), page
        assert not [h for h in hidden if h in text], f"{page.name} shows a hidden check"


def test_similar_pairs_are_in_summary_json_txt_and_class_html(graded):
    out, _ = graded
    found = json.loads((out / "summary.json").read_text())["similarity"]
    pairs = {tuple(p["students"]) for p in found["pairs"]}
    # the three copies of the solutions (a folder, a zip, loose files) share all their code
    assert {("correct", "flat_files"), ("correct", "zipped"), ("flat_files", "zipped")} <= pairs, pairs
    first = next(p for p in found["pairs"] if p["students"] == ["correct", "zipped"])
    assert first["similarity"] == [1.0, 1.0] and {f["file"] for f in first["files"]} == {
        "layer_norm.py", "feed_forward.py", "embedding.py", "positional_encoding.py"}
    assert not [p for p in pairs if "empty" in p or "bad_zip" in p]
    # the class's trees are built from the solutions: one group holds the three copies and the others
    [group] = [g for g in found["groups"] if "correct" in g["students"]]
    assert {"correct", "flat_files", "zipped"} <= set(group["students"]) and group["pairs"] >= 3
    assert found["groups"][0]["similarity"] == 1.0
    text = (out / "summary.txt").read_text()
    assert "Similar pairs" in text and "layer_norm.py" in text
    assert text.index("Groups sharing code") < text.index("Total score") < text.index("Per component")
    page = (out / "class.html").read_text()
    assert "<h3>correct and zipped: 100% / 100%</h3>" in page and page.count("<mark>") > 20
    assert page.index("Groups sharing code") < page.index("Total score") < page.index("<h2>Students</h2>") \
        < page.index("<h3>correct and zipped")


def test_without_matplotlib_the_class_page_has_its_tables_and_says_so(graded, tmp_path):
    out, _ = graded
    summary = json.loads((out / "summary.json").read_text())
    rows = [(r["batch"]["student"], r) for r in (json.loads(p.read_text()) for p in (out / "reports").glob("*.json"))]
    code = ("import json, sys; sys.modules['matplotlib'] = None\nfrom pathlib import Path\n"
            "from grader.batch import html\nfrom grader.report_json import graded\n"
            "summary, rows = json.loads(sys.stdin.read())\n"
            f"html.write_class(Path({str(tmp_path)!r}), summary, [(s, graded(r)) for s, r in rows])\n")
    subprocess.run([sys.executable, "-c", code], input=json.dumps([summary, rows]), text=True, check=True,
                   cwd=Path(__file__).resolve().parents[3])
    page = (tmp_path / "class.html").read_text()
    assert "matplotlib is not installed" in page and "<svg" not in page
    assert "<th>score</th><th>students</th>" in page and "layer_norm_matches_torch" in page
