"""Docs that cannot rot (issue 45), on the site built strictly: every flag of every command is in the CLI
reference, figures are generated (the built page says what the kit's files say), the student tutorial is
the release's README, and the architecture page names every module and the performance page every
benchmark (the docs' sources: tests/kit/unit/test_docs.py)."""

import html
import json
import re
from pathlib import Path

from grader import load_course
from grader.authoring.readme import readme_text
from grader.authoring.torch_pin import TORCH
from tests.kit.conftest import ROOT
from tests.kit.docs_pages import (
    DOCS,
    hooks,
    site_fixture,  # noqa: F401 (the fixture `site`)
    sources,
)


def page(site: Path, rel: str) -> str:
    """A built page's text, tags dropped."""
    html = (site / rel / "index.html").read_text()
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_every_flag_of_every_command_is_in_the_cli_reference(site):
    text = page(site, "reference/cli")
    for name, options in hooks.flags().items():
        assert f"{name} " in text or text.endswith(name), name
        for option in options:
            assert option in text, (name, option)
    assert len(hooks.flags()) >= 14 and "--unsafe-process-isolation" in hooks.flags()["grade batch"]


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
