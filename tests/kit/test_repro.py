"""Debugging where students work: `grade --repro` writes a failing check as a plain script that fails on
the bug and passes once it is fixed; `grade --only` runs a few checks alone (end to end, with the
notebook: tests/kit/test_notebook.py)."""

import ast
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, SOLUTIONS, mutant, run_grade
from tests.kit.mutants import patches
from tests.kit.test_cli import one_line_error

# what a repro script may import: the standard library's few, and torch (the student's files come in
# through importlib); never the grader or the suites
ALLOWED_IMPORTS = {"importlib", "importlib.machinery", "importlib.util", "math", "sys", "pathlib", "torch"}


def imports(script: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    return names


def run_script(script: Path) -> subprocess.CompletedProcess:
    # from an empty folder, so that nothing but the script's own imports can be found there
    return subprocess.run([sys.executable, str(script)], cwd=script.parent, capture_output=True, text=True,
                          timeout=120)


def fix(tree: Path, bug: str) -> None:
    """Put the solution's version of every file the bug patched back into `tree`."""
    for rel in patches(bug):
        shutil.copy(SOLUTIONS / rel, tree / rel)


@pytest.mark.parametrize("option, value, words", [
    ("--only", "sdpa_matches_torch,sdpa_matches_torhc", ["'sdpa_matches_torhc'", "closest: sdpa_matches_torch"]),
    ("--only", ",", ["expected check ids"]),
    ("--repro", "sdpa_matches_torhc", ["'sdpa_matches_torhc'", "closest: sdpa_matches_torch"]),
    ("--repro", "mha_has_named_layers", ["mha_has_named_layers cannot be reproduced", "sdpa_matches_torch"]),
])
def test_a_check_that_cannot_be_run_is_one_line(option, value, words):
    one_line_error(run_grade("assignment2", option, value), *words)


def test_narrowing_keeps_the_courses_order_and_drops_empty_components():
    from grader import load_course
    from grader.grading.only import narrow

    spec = load_course(ROOT / "course.toml").assignment("assignment2")
    narrowed = narrow(spec, frozenset({"mha_matches_torch", "sdpa_weights_rows_sum_to_one", "sdpa_matches_torch"}))
    assert [(c.name, [chk.id for chk in c.checks]) for c in narrowed.components] == [
        ("scaled_dot_product_attention", ["sdpa_matches_torch", "sdpa_weights_rows_sum_to_one"]),
        ("MultiHeadAttention", ["mha_matches_torch"])]
    assert narrowed.components[1].isolated == ()


def test_the_reports_example_reads_back_exactly():
    import torch

    from grader.interactive.repro import parse_example
    from grader.suite.checks import describe

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, generator=g) * 1e3
    x[0, 0, 0], x[0, 0, 1], x[1, 2, 3] = math.inf, -math.inf, math.nan
    values = {"q": x, "scalar": torch.tensor(1.5), "mask": torch.rand(3, 4, generator=g) < 0.5,
              "tokens": torch.randint(0, 9, (2, 5), generator=g), "none": None, "pad_idx": 3, "smoothing": 0.1}
    back = parse_example(describe(**values))
    assert back.keys() == values.keys()
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            assert back[name].dtype == value.dtype and back[name].shape == value.shape, name
            assert torch.equal(back[name].nan_to_num(7.0), value.nan_to_num(7.0)), name
        else:
            assert back[name] == value, name
    with pytest.raises(ValueError, match="too large"):
        parse_example(describe(q=torch.zeros(100)))
    # an exception's example is Hypothesis's repr of its draw, rounded: not read back as if exact
    with pytest.raises(ValueError, match="rounded"):
        parse_example("a=AttentionInputs(q=tensor([[1.5410]])\nk=tensor([[0.6614]])\nmask=None\nseed=0)")
    with pytest.raises(ValueError):
        parse_example("")


def test_repro_script_from_the_command_line_fails_on_the_bug_and_passes_on_the_fix(tmp_path):
    # attention without its scale: the example is the one the grader shrinks, graded for the purpose
    tree = mutant(tmp_path, patches("no_sqrt_d_k"))
    here = tmp_path / "work"
    here.mkdir()
    proc = run_grade("assignment2", "--submission", str(tree), "--repro", "sdpa_matches_torch", cwd=here)
    assert proc.returncode == 0, proc.stderr[-3000:]
    script = here / "repro_sdpa_matches_torch.py"
    assert proc.stdout.strip() == str(script)
    assert imports(script) <= ALLOWED_IMPORTS, imports(script)
    assert "solutions" not in script.read_text()  # values only, never the reference's code or path

    failing = run_script(script)
    assert failing.returncode == 1, failing.stdout[-3000:] + failing.stderr[-3000:]
    for words in ("=== inputs", "q = tensor(", "=== attention weights", "expected:", "got:", "largest error",
                  "FAIL"):
        assert words in failing.stdout, failing.stdout
    fix(tree, "no_sqrt_d_k")
    fixed = run_script(script)
    assert fixed.returncode == 0 and "PASS" in fixed.stdout, fixed.stdout[-3000:] + fixed.stderr[-3000:]


# Runs scripts one after another in one Python (torch imported once), each as `python SCRIPT` would:
# its exit status, with the student's package imported afresh for each
RUNNER = """
import contextlib, io, json, runpy, sys
codes = []
for path in sys.argv[1:]:
    for name in [m for m in sys.modules if m == "submission" or m.startswith("submission.")]:
        del sys.modules[name]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            runpy.run_path(path, run_name="__main__")
            codes.append(0)
        except SystemExit as e:
            codes.append(e.code if isinstance(e.code, int) else 1)
        except BaseException:
            codes.append(1)  # a traceback: python exits with status 1
print(json.dumps(codes))
"""


def test_repro_scripts_fail_on_every_bug_of_the_table_and_pass_on_the_fix(tmp_path):
    """For each bug of the table and each check it fails that --repro knows, the script written from
    the failing example that `grade expected` recorded (bugs.json: what the report shows) fails on the
    bug's tree and passes on the solutions."""
    import json
    import os

    from grader import load_course
    from grader.interactive import repro
    from grader.judging.diagnosis import load
    from tests.grading.bugs import BUGS

    course = load_course(ROOT / "course.toml")
    known = {check for a in course.assignments.values() for check in repro.reproducible(course, a)}
    fixed = tmp_path / "fixed"
    shutil.copytree(SOLUTIONS, fixed, ignore=shutil.ignore_patterns("__pycache__"))
    scripts: list[tuple[Path, int]] = []
    for bug, entry in load(course).items():
        tree = mutant(tmp_path / bug, BUGS[bug].patches)
        for check, outcome in entry["failing"].items():
            if check not in known:
                continue
            example = repro.parse_example(outcome["example"]) if check in repro.EXAMPLES else None
            for submission, status in ((tree, 1), (fixed, 0)):
                folder = tmp_path / "scripts" / bug / str(status)
                folder.mkdir(parents=True, exist_ok=True)
                script = repro.write(course=course, assignment=BUGS[bug].assignment, check=check,
                                     submission=submission, example=example, folder=folder)
                scripts.append((script, status))
    assert len({script.stem for script, _ in scripts}) >= 10 and len(scripts) >= 60, scripts
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", RUNNER, *(str(s) for s, _ in scripts)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(proc.stdout)
    wrong = [(str(s.relative_to(tmp_path)), want, got) for (s, want), got in zip(scripts, codes, strict=True)
             if (got != 0) != (want != 0)]
    assert not wrong, wrong
