"""Docs that cannot rot (issue 45): the site builds strictly, every `grade` command line in the docs and
the READMEs (the student README too) is parsed by the real argument parser, every flag of every
command is in the CLI reference, every file path the docs name exists, figures are generated (the
built page says what the kit's files say), and the built site opens in headless Chromium with no
broken link or image."""

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from grader import load_course
from grader.authoring.readme import readme_text
from grader.authoring.torch_pin import TORCH
from tests.kit import needs
from tests.kit.chromium import Browser
from tests.kit.conftest import ROOT

spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools/docs_hooks.py")
assert spec and spec.loader
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

DOCS = ROOT / "docs"
# paths the docs tell a reader to create (Add a component's example), not ones that exist
CREATED = {"solutions/assignment1/rms_norm.py", "assignments/assignment1/rms_norm.py"}
TOP = ("grader/", "tests/", "solutions/", "assignments/", "benchmarks/", "docs/", "tools/", ".ci/")
ROOT_FILES = ("course.toml", "pyproject.toml", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "mkdocs.yml")


def sources() -> dict[str, str]:
    """Every text a reader gets: the docs pages, the kit's READMEs, and the student README."""
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(DOCS.rglob("*.md"))}
    for name in ("README.md", "CONTRIBUTING.md"):
        texts[name] = (ROOT / name).read_text()
    texts["student README"] = readme_text(load_course(ROOT / "course.toml"))
    return texts


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    return out


def _env() -> dict[str, str]:
    return dict(os.environ)


def page(site: Path, rel: str) -> str:
    """A built page's text, tags dropped."""
    html = (site / rel / "index.html").read_text()
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


# grade command lines ---------------------------------------------------------------------

def command_lines(text: str) -> list[str]:
    """`grade ...` in code blocks (each command of a line: `a && grade b`, `!grade c`) and in inline code."""
    found = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in re.split(r"&&|;|\|", line.split(" #")[0]):
                part = part.strip().removeprefix("!").removeprefix("$ ")
                if part.startswith("grade "):
                    found.append(part)
    for span in re.findall(r"`(grade [^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        span = " ".join(span.split())
        if span not in hooks.flags():  # `grade batch` names the command; anything more is a command line
            found.append(span)
    return [line.replace("CHECK[,CHECK...]", "CHECK") for line in found]


def test_every_grade_command_line_in_the_docs_parses():
    seen, bad = 0, []
    for name, text in sources().items():
        for line in command_lines(text):
            seen += 1
            try:
                hooks.parse(line)
            except SystemExit as e:
                bad.append((name, line, e.code))
    assert not bad, bad
    assert seen >= 40, seen  # the docs do name commands: the scan finds them


def test_a_wrong_command_line_would_be_caught():
    for line in ("grade batch subs/", "grade assignment1 --verbatim", "grade nbgrader prepare .",
                 "grade export canvas g.csv --column A"):
        with pytest.raises(SystemExit):
            hooks.parse(line)


def test_every_flag_of_every_command_is_in_the_cli_reference(site):
    text = page(site, "reference/cli")
    for name, options in hooks.flags().items():
        assert f"{name} " in text or text.endswith(name), name
        for option in options:
            assert option in text, (name, option)
    assert len(hooks.flags()) >= 14 and "--unsafe-process-isolation" in hooks.flags()["grade batch"]


def test_unsafe_process_isolation_is_not_said_to_be_needed_wherever_namespaces_are_missing():
    """grade batch and grade gradescope grade in the seccomp tier without it (issue 45's contradiction)."""
    for name in ("grade batch", "grade gradescope"):
        action = next(a for a in hooks.parsers()[name]._actions if "--unsafe-process-isolation" in a.option_strings)
        assert "no isolation tier" in action.help and "namespaces are unavailable" not in action.help, name


# paths --------------------------------------------------------------------------------------

def named_paths(text: str) -> set[str]:
    spans = re.findall(r"`([^`\n]+)`", text) + re.findall(r"\]\(([^)#\s]+)", text)
    found = set()
    for span in spans:
        for word in span.split():
            word = word.strip("(),;:'\"").split(":")[0]
            if not (word.startswith(TOP) or word in ROOT_FILES):
                continue
            if re.search(r"[*<>{}\[\]]|assignmentN|[A-Z]{2,}", word):
                continue  # a placeholder, not a path
            found.add(word)
    return found


def test_every_path_the_docs_name_exists():
    missing = []
    for name, text in sources().items():
        for path in named_paths(text):  # all named from the kit's root (the student README: the release's)
            if path in CREATED:
                continue
            if not (ROOT / path).exists():
                missing.append((name, path))
    assert not missing, missing


def test_the_readme_links_resolve():
    for name in ("README.md", "CONTRIBUTING.md"):
        for target in re.findall(r"\]\(([^)#\s]+)", (ROOT / name).read_text()):
            if not target.startswith(("http://", "https://")):
                assert (ROOT / target).exists(), (name, target)


# figures and the things READMEs state ------------------------------------------------------

def test_figures_are_generated_from_the_kits_files(site):
    bugs = json.loads((ROOT / "tests/grading/public/expected/bugs.json").read_text())
    assert f"lists {len(bugs)} classic bugs" in page(site, "explanation/diagnosis")
    assert f"for {len(bugs)} classic bugs" in page(site, "")
    figures = hooks.figures()
    record = json.loads((ROOT / "tests/kit/heldout_record.json").read_text())
    assert figures["heldout_total"] == str(len(record))
    text = page(site, "explanation/diagnosis")
    assert f"held-out set of {len(record)} classic bugs" in text
    assert f"names {figures['heldout_named']} of them" in text and figures["heldout_elsewhere"] == "0"
    assert int(figures["heldout_by_table"]) + int(figures["heldout_by_forensics"]) == int(figures["heldout_named"])
    # typed, the count would rot: the pages' sources name it only through the hook
    for name, text in sources().items():
        assert not re.search(r"\b\d+ (classic bugs|entries)\b", text.replace("{{ bugs_total }} classic", "")), name


def test_the_student_tutorial_is_the_release_readme(site):
    """The built tutorial holds the release's README word for word (its title aside)."""
    def words(text: str) -> str:
        return " ".join(re.findall(r"\w+", html.unescape(re.sub(r"<[^>]+>", " ", text))))

    readme = readme_text(load_course(ROOT / "course.toml")).split("\n", 1)[1]
    readme = re.sub(r"```\w*", "", readme)  # a fence's language is not shown
    assert f"pip install torch=={TORCH}" in readme
    assert words(readme) in words((site / "tutorial/first-grade/index.html").read_text())


def test_the_readme_says_what_ci_runs():
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci/run").read_text()
    assert len(readme.splitlines()) <= 150
    test_command = "python -m pytest -n 2 --dist loadgroup"
    assert test_command in readme and test_command in ci
    extras = re.findall(r'pip install --quiet -e "\.\[([\w,]+)\]"', ci)
    assert extras and f'pip install -e ".[{extras[0]}]"' in readme, extras
    assert set(re.findall(r"torch==([\d.]+)", readme + (ROOT / "CONTRIBUTING.md").read_text())) == {TORCH}
    assert "mkdocs build --strict" in ci


def test_contributing_names_every_test_tier():
    from tests.kit.tiering import TIERS

    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert all(f"| `{tier}` |" in text for tier in TIERS), TIERS


def test_the_changelog_has_dated_releases_and_a_short_unreleased():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert releases and releases[0][0] == hooks_version(), releases
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert len(unreleased.strip().splitlines()) <= 40


def hooks_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_architecture_page_names_every_module_and_the_performance_page_every_benchmark(site):
    text = page(site, "development/architecture")
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if "__pycache__" not in rel.parts:
            shown = f"{rel.parent.as_posix()}/" if rel.name == "__init__.py" else rel.as_posix()
            assert shown in text, shown
    performance = (DOCS / "explanation/performance.md").read_text()
    for bench in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"benchmarks/{bench.name}" in performance, bench.name


# the built site in a browser ---------------------------------------------------------------

class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "link", "script", "source"):
                self.refs.append((tag, a[key] or ""))


@pytest.mark.needs("chromium")  # checked before the site is built
def test_the_site_opens_in_chromium_with_no_broken_link_or_image(site, tmp_path):
    exe = needs.chromium()
    pages = sorted(p for p in site.rglob("index.html") if "search" not in p.parts)
    assert len(pages) >= 20, pages
    broken = []
    with Browser(exe, tmp_path) as browser:  # one browser for every page (tests/kit/chromium.py)
        doms = {html_page: browser.dom(html_page.as_uri()) for html_page in pages}
    for html_page, dom in doms.items():
        assert "<article" in dom, html_page  # Chromium read and laid out the page
        links = Links()
        links.feed(dom)
        for tag, ref in links.refs:
            parts = urlsplit(ref)
            if parts.scheme in ("http", "https", "mailto", "data") or not parts.path:
                continue
            target = (html_page.parent / unquote(parts.path)).resolve()
            if parts.scheme == "file":
                target = Path(unquote(parts.path))
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append((str(html_page.relative_to(site)), tag, ref))
    assert not broken, broken
