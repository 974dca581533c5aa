"""A grader running as root (CI, containers, Gradescope) runs no submission as root: in either
isolation its process limit holds, and in the process sandbox (where namespaces are refused) it
cannot write what the grader writes, signal the grader or read the reference through it.

Root only: for any other user these hold by the kernel's ordinary rules."""

import json
import os
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import isolation
from tests.kit import seccomp
from tests.kit.attacks import ATTACKS, FORK_BOMB, build
from tests.kit.conftest import earned, full_marks, held, run_grade, scores
from tests.kit.sandbox.test_isolation import hostile

pytestmark = [pytest.mark.needs("root"),  # what a root grader does: run as root (CI does)
              pytest.mark.skipif(not seccomp.SUPPORTED, reason="the namespace refusal is an x86-64 Linux filter")]
NAMESPACES = pytest.mark.skipif(bool(isolation.unavailable()), reason=f"no namespaces here: {isolation.unavailable()}")
SECCOMP = pytest.mark.skipif("error" in isolation.confinement(),
                             reason=f"no seccomp tier here: {isolation.confinement().get('error')}")
# (attack, isolation): what namespaces stopped for a root grader already is not repeated
CASES = [("fork_bomb", "process"), pytest.param("fork_bomb", "seccomp", marks=SECCOMP),
         pytest.param("fork_bomb", "namespaces", marks=NAMESPACES),
         ("reads_the_solution_through_the_graders_cwd", "process"),
         pytest.param("reads_the_solution_through_the_graders_cwd", "seccomp", marks=SECCOMP)]
BELOW_NAMESPACES = ["process", pytest.param("seccomp", marks=SECCOMP)]


def graded(tree: Path, mode: str, monkeypatch, *extra: str) -> dict:
    """`grade` as root; below "namespaces": where the kernel refuses namespaces for real (a seccomp
    filter as in Docker's default profile), so that the grader itself finds them refused and falls
    back, to the seccomp tier ("auto") or, asked for, the process tier."""
    if mode == "process":
        monkeypatch.setenv(isolation.ENV_VAR, "process")
    else:
        monkeypatch.delenv(isolation.ENV_VAR, raising=False)
    proc = run_grade("assignment1", "--submission", str(tree), "--json", "-", *extra,
                     refuse_namespaces=mode != "namespaces")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["isolation"] == mode
    return report


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_an_attack_on_a_root_grader_fails_in_either_isolation(tmp_path, monkeypatch, mode, name):
    """With course.toml's own timeout: a shell's 512 forks take seconds on a loaded machine."""
    attack = FORK_BOMB if name == "fork_bomb" else ATTACKS[name]
    report = graded(build(tmp_path, attack), mode, monkeypatch)
    got, full = scores(report), full_marks(report)
    assert {n: s for n, s in got.items() if n != attack.component} == \
        {n: s for n, s in full.items() if n != attack.component}
    # what its checks earn: the fork (flagged) holds its points at 0 for review under the default policy
    assert (earned(report)[attack.component] == full[attack.component]) == attack.keeps, report
    assert (attack.component in held(report)) == bool(attack.flagged), report


@pytest.mark.parametrize("mode", BELOW_NAMESPACES)
def test_the_process_sandbox_of_a_root_grader_is_another_user(tmp_path, monkeypatch, mode):
    """What the grader writes (its JSON, Gradescope's results.json) lies in a folder every user can
    reach: a submission running as root could rewrite it, and signal the grader and this test."""
    out = Path(tempfile.mkdtemp(prefix="grader-out-"))
    try:
        out.chmod(0o755)
        results = out / "results.json"
        results.write_text('{"score": 0}')
        attack = f"""
import signal
LEAK = os.getuid() == 0 or os.geteuid() == 0
for path, how in (({str(results)!r}, "a"), ({str(out / "forged.json")!r}, "w")):
    try:
        with open(path, how) as f:
            f.write('{{"score": 40}}')
        LEAK = True
    except OSError as e:
        print("refused:", e)
for pid in (os.getppid(), {os.getpid()}):
    try:
        os.kill(pid, 0)  # a signal's permission check, without the signal
        LEAK = True
    except OSError as e:
        print("refused:", e)
"""
        report = graded(hostile(tmp_path, attack), mode, monkeypatch)
        assert scores(report) == full_marks(report)
        assert results.read_text() == '{"score": 0}' and not (out / "forged.json").exists()
    finally:
        for path in out.iterdir():
            path.unlink()
        out.rmdir()
