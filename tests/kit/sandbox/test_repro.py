"""Debugging where students work: `grade --repro` writes a failing check as a plain script that fails on
the bug and passes once it is fixed; `grade --only` runs a few checks alone (end to end, with the
notebook: tests/kit/kernel/test_notebook.py)."""

import ast
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, SOLUTIONS, mutant, run_grade
from tests.kit.mutants import patches
from tests.kit.sandbox.test_cli import one_line_error

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


def test_the_failing_example_reads_back_exactly_from_its_data():
    """describe() records the example's values as data (the report's "inputs", JSON), and --repro reads
    them back exactly, infinities and NaN included; never from the example's text."""
    import json

    import torch

    from grader.interactive.repro import decode
    from grader.suite.checks import describe
    from grader.suite.example import carrying

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, generator=g) * 1e3
    x[0, 0, 0], x[0, 0, 1], x[1, 2, 3] = math.inf, -math.inf, math.nan
    values = {"q": x, "scalar": torch.tensor(1.5), "mask": torch.rand(3, 4, generator=g) < 0.5,
              "tokens": torch.randint(0, 9, (2, 5), generator=g), "none": None, "pad_idx": 3, "smoothing": 0.1,
              "big": torch.zeros(100)}  # printed in part, recorded in full
    example = carrying(describe(**values), seed=7)
    assert example == describe(**values) and "seed" not in example  # the text is as before: the seed is data only
    back = decode(json.loads(json.dumps(example.values, allow_nan=False)), (*values, "seed"))
    assert back.keys() == {*values, "seed"} and back["seed"] == 7
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            assert back[name].dtype == value.dtype and back[name].shape == value.shape, name
            assert torch.equal(back[name].nan_to_num(7.0), value.nan_to_num(7.0)), name
        else:
            assert back[name] == value, name
    with pytest.raises(ValueError, match="too large"):
        decode(describe(q=torch.zeros(5000)).values, ("q",))
    with pytest.raises(ValueError, match="has no k"):
        decode(describe(q=torch.zeros(3)).values, ("q", "k"))


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


# multi-head attention scaled by sqrt(d_model) instead of sqrt(d_k): only the projection weights the
# check drew (recorded as their seed) make the example fail
MHA_SCALE = {"assignment2/multi_head_attention.py": [
    ("_, weights = scaled_dot_product_attention(q, k, v, mask)",
     "_, weights = scaled_dot_product_attention(q * (self.d_k / self.d_model) ** 0.5, k, v, mask)")]}


@pytest.mark.parametrize("check", ["mha_matches_torch", "mha_matches_torch_with_a_causal_mask"])
def test_repro_of_a_multi_head_attention_check_rebuilds_its_weights(tmp_path, check):
    tree = mutant(tmp_path, MHA_SCALE)
    here = tmp_path / "work"
    here.mkdir()
    proc = run_grade("assignment2", "--submission", str(tree), "--repro", check, cwd=here)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    script = here / f"repro_{check}.py"
    assert proc.stdout.strip() == str(script)
    assert imports(script) <= ALLOWED_IMPORTS, imports(script)
    assert "state = {" in script.read_text() and "'w_o.weight'" in script.read_text()
    failing = run_script(script)
    assert failing.returncode == 1, failing.stdout[-3000:] + failing.stderr[-3000:]
    assert "=== MultiHeadAttention output" in failing.stdout and "FAIL" in failing.stdout, failing.stdout
    fix_file = "assignment2/multi_head_attention.py"
    shutil.copy(SOLUTIONS / fix_file, tree / fix_file)
    fixed = run_script(script)
    assert fixed.returncode == 0 and "PASS" in fixed.stdout, fixed.stdout[-3000:] + fixed.stderr[-3000:]


def test_every_public_check_gets_a_script_or_a_one_line_reason():
    """Each public check of each assignment is either one --repro writes a script for, or --repro
    refuses it in one line (exit 2: a ConfigError) that says why and names those it can; no traceback."""
    from grader import load_course
    from grader.course_table import ConfigError
    from grader.interactive import repro

    course = load_course(ROOT / "course.toml")
    scripted, refused = [], []
    for spec in course.assignments.values():
        can = repro.reproducible(course, spec)
        for check in (chk.id for comp in spec.components for chk in comp.checks if chk.tier == "public"):
            if check in can:
                scripted.append(check)
                continue
            with pytest.raises(ConfigError) as refusal:
                repro.main(course=course, assignment=spec, check=check, submission=SOLUTIONS)
            said = str(refusal.value)
            assert "\n" not in said and f"{check} cannot be reproduced as a script: " in said, said
            assert repro.known(course, spec.name).reason(check) in said and (can[0] if can else "none") in said
            refused.append(check)
    assert {"mha_matches_torch", "mha_matches_torch_with_a_causal_mask", "mha_keeps_attention_weights",
            "sdpa_matches_torch", "noam_lr_matches_formula"} <= set(scripted), scripted
    assert {"vocab_specials_come_first", "collate_shifts_the_target", "label_smoothing_loss_gradients_match_torch",
            "train_epoch_updates_like_the_definition", "greedy_decode_runs_in_eval_mode"} <= set(scripted), scripted
    assert len(scripted) >= 104 and refused, (scripted, refused)


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
    """For each bug of the table and each check it fails that --repro knows (bugs.json), the script
    fails on the bug's tree and passes on the solutions. A stored check's script needs no grading; a
    recipe's needs the failing example's data as the check recorded it, which `grade expected` keeps in
    the bug's entry (its "repro": the data the recipe reads, or why there is none), from the same
    shrunk run of the component's public checks that its "failing" comes from: no grading here."""
    import json
    import os

    from grader import load_course
    from grader.interactive import repro
    from grader.judging.diagnosis import load
    from tests.grading.bugs import BUGS

    course = load_course(ROOT / "course.toml")
    table = load(course)
    assert set(table) == set(BUGS), "bugs.json is stale: run grade expected"
    scripts, skipped = _scripts(course, table, tmp_path)
    written = {script.stem.removeprefix("repro_") for script, _ in scripts}
    recipes = written & set(repro.known(course, "assignment2").examples)
    assert len(written) >= 10 and len(scripts) >= 60, scripts
    # refused, each in words: names the grader could not load weights by (no example was built yet), or
    # an exception (its example is text)
    said = ("it failed before its example was built", "it failed by an exception")
    assert all(any(words in why for words in said) for why in skipped), skipped
    examples = repro.known(course, "assignment2").examples
    pairs = sum(script.stem.removeprefix("repro_") in examples for script, _ in scripts) // 2  # bug and fix
    assert 3 * len(skipped) <= pairs, (pairs, skipped)  # a quarter of the recipe checks refused at most
    print(f"{len(scripts)} scripts ({pairs} bug-check pairs from recipes), refused: {skipped}")
    assert {"mha_matches_torch", "sdpa_matches_torch"} <= recipes, recipes
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", RUNNER, *(str(s) for s, _ in scripts)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(proc.stdout)
    wrong = [(str(s.relative_to(tmp_path)), want, got) for (s, want), got in zip(scripts, codes, strict=True)
             if (got != 0) != (want != 0)]
    assert not wrong, wrong


def _scripts(course, table: dict, tmp_path: Path) -> tuple[list[tuple[Path, int]], list[str]]:
    """([(script, the exit status it must give)]: each bug's and each fix's script of each check the bug
    fails that --repro knows, the recipes' examples read from bugs.json; [the recipe checks it refused, why])."""
    from grader.interactive import repro
    from tests.grading.bugs import BUGS

    fixed = tmp_path / "fixed"
    shutil.copytree(SOLUTIONS, fixed, ignore=shutil.ignore_patterns("__pycache__"))
    scripts: list[tuple[Path, int]] = []
    skipped: list[str] = []  # bugs.json's failing recipe checks whose example cannot be rebuilt
    for bug, entry in table.items():
        assignment = BUGS[bug].assignment
        found = repro.known(course, assignment)
        failing = [c for c in repro.reproducible(course, course.assignment(assignment)) if c in entry["failing"]]
        if not failing:
            continue
        tree = mutant(tmp_path / bug, BUGS[bug].patches)
        examples = {}
        for check in (c for c in failing if c in found.examples):
            recorded = entry.get("repro", {}).get(check)
            assert recorded is not None, f"{bug}: bugs.json has no repro data for {check}: run grade expected"
            if "refused" in recorded:
                skipped.append(f"{bug}: {check}: {recorded['refused']}")
            else:
                examples[check] = repro.decode(recorded["inputs"], found.examples[check].inputs)
        for check in (c for c in failing if c in examples or c in found.stored):
            for submission, status in ((tree, 1), (fixed, 0)):
                folder = tmp_path / "scripts" / bug / str(status)
                folder.mkdir(parents=True, exist_ok=True)
                script = repro.write(course=course, assignment=assignment, check=check,
                                     submission=submission, example=examples.get(check), folder=folder)
                scripts.append((script, status))
    return scripts, skipped
