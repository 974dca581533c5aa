"""Docs that cannot rot (issue 45), read from their sources: every `grade` command line in the docs and
the READMEs (the student README too) is parsed by the real argument parser, every file path the docs
name exists, the READMEs' links resolve, the README says what CI runs, CONTRIBUTING.md names every test
tier and the changelog has dated releases (the built site: tests/kit/sandbox/test_docs.py and
tests/kit/browser/test_docs.py)."""

import re

import pytest

from grader.authoring.torch_pin import TORCH
from tests.kit.conftest import ROOT
from tests.kit.docs_pages import hooks, sources

# paths the docs tell a reader to create (Add a component's example), not ones that exist
CREATED = {"solutions/assignment1/rms_norm.py", "assignments/assignment1/rms_norm.py"}
TOP = ("grader/", "tests/", "solutions/", "assignments/", "benchmarks/", "docs/", "tools/", ".ci/")
ROOT_FILES = ("course.toml", "pyproject.toml", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "mkdocs.yml")


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
