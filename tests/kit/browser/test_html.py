"""`grade batch`'s HTML (grader.batch.html): class.html and feedback/STUDENT.html from a real batch
(conftest.graded), opened in headless Chromium (Debian's `chromium`; .ci/run installs it; elsewhere
skipped without it, before the class is graded, saying how to get it: tests/kit/needs.py)."""

import html
import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from tests.kit import needs
from tests.kit.conftest import HOSTILE, HOSTILE_OUTPUT

# the graded class, graded once on one worker
pytestmark = [pytest.mark.xdist_group("batch_class"), pytest.mark.needs("chromium")]
PLOT_BLUE = (0x4C, 0x78, 0xA8)  # the plots' and the bars' colour (grader/batch/html.py, base.html.j2)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    exe = needs.chromium()
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=180, check=True)


def screenshot(tmp_path: Path, page: Path, name: str) -> np.ndarray:
    from PIL import Image

    png = tmp_path / f"{name}.png"
    chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,1600", page.resolve().as_uri())
    return np.asarray(Image.open(png).convert("RGB")).astype(int)


def student_page(out: Path, student: str) -> Path:
    report = next(p for p in (out / "reports").glob("*.json")
                  if json.loads(p.read_text())["batch"]["student"] == student)
    return out / "feedback" / f"{report.stem}.html"


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(text: str) -> list[tuple[str, dict]]:
    parser = Tags()
    parser.feed(text)
    return parser.tags


def test_class_html_and_a_students_page_render_in_headless_chromium(graded, tmp_path):
    out, proc = graded
    assert "class.html" in " ".join(proc.stdout.split())
    for page, name in ((out / "class.html", "class"), (student_page(out, "partial"), "partial")):
        pixels = screenshot(tmp_path, page, name)
        ink = (pixels < 235).any(axis=2).mean()
        blue = (np.abs(pixels - PLOT_BLUE).max(axis=2) < 12).sum()
        # not blank: text and tables, and the plots (or the student's bars) drawn in their colour
        assert ink > 0.02 and blue > 500, (name, ink, blue)


def test_the_pages_show_a_hostile_name_and_output_as_text(graded, tmp_path):
    out, _ = graded
    page = student_page(out, HOSTILE)
    assert page.is_file() and HOSTILE not in page.name
    for path in (out / "class.html", page):
        text = path.read_text()
        found = tags(text)
        assert not [t for t, _ in found if t in ("script", "img")], path
        assert not [a for _, a in found if any(k.startswith("on") for k in a)], path
        assert html.escape(HOSTILE, quote=False) in text
        # Chromium's own reading of the page: the name is text in the document, no element
        dom = chromium(tmp_path, "--dump-dom", path.resolve().as_uri()).stdout
        assert "<script" not in dom and "<img" not in dom and "&lt;img src=x onerror=alert(1)&gt;" in dom
    # what the submission printed is in its report (and on its page) as text
    assert HOSTILE_OUTPUT in page.with_suffix(".txt").read_text()
    assert html.escape(HOSTILE_OUTPUT) in page.read_text()
