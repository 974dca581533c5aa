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
    from grader.only import narrow

    spec = load_course(ROOT / "course.toml").assignment("assignment2")
    narrowed = narrow(spec, frozenset({"mha_matches_torch", "sdpa_weights_rows_sum_to_one", "sdpa_matches_torch"}))
    assert [(c.name, [chk.id for chk in c.checks]) for c in narrowed.components] == [
        ("scaled_dot_product_attention", ["sdpa_matches_torch", "sdpa_weights_rows_sum_to_one"]),
        ("MultiHeadAttention", ["mha_matches_torch"])]
    assert narrowed.components[1].isolated == ()


def test_the_reports_example_reads_back_exactly():
    import torch

    from grader.repro import parse_example
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


# bugs of the table: a check compared with torch whose example the grader shrinks (through the command
# line), a stored-reference check of modules given weights, and a formula's (through the library)
@pytest.mark.parametrize("assignment, bug, check", [
    ("assignment2", "no_sqrt_d_k", "sdpa_matches_torch"),
    ("assignment3", "encoder_layer_skips_the_mask", "encoder_layer_matches_stored_reference"),
    ("assignment4", "noam_lr_warmup_exponent_sign", "noam_lr_matches_formula"),
])
def test_repro_script_fails_on_the_bug_and_passes_on_the_fix(tmp_path, capsys, assignment, bug, check):
    tree = mutant(tmp_path, patches(bug))
    here = tmp_path / "work"
    here.mkdir()
    script = here / f"repro_{check}.py"
    if assignment == "assignment2":
        proc = run_grade(assignment, "--submission", str(tree), "--repro", check, cwd=here)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip() == str(script)
    else:
        from grader import load_course, repro

        course = load_course(ROOT / "course.toml")
        assert repro.main(course=course, assignment=assignment, check=check, submission=tree, folder=here) == 0
        assert capsys.readouterr().out.strip() == str(script)
    assert imports(script) <= ALLOWED_IMPORTS, imports(script)
    assert "solutions" not in script.read_text()  # values only, never the reference's code or path

    failing = run_script(script)
    assert failing.returncode == 1, failing.stdout[-3000:] + failing.stderr[-3000:]
    for word in ("=== inputs", "expected", "got", "error", "FAIL"):
        assert word in failing.stdout, failing.stdout
    fix(tree, bug)
    fixed = run_script(script)
    assert fixed.returncode == 0 and "PASS" in fixed.stdout, fixed.stdout[-3000:] + fixed.stderr[-3000:]
