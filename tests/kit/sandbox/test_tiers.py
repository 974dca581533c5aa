"""The isolation ladder on machines that refuse more and more, for real: a seccomp filter installed
before `grade` starts (tests/kit/seccomp.py) refuses namespaces as Docker's default profile does,
and, further down, Landlock (a kernel before 5.13) and any seccomp filter of the grader's own (a
kernel without seccomp filters). `auto` takes the highest tier left; a tier asked for by name that
is refused is one line and exit status 2; `grade doctor` says which and why; a batch grades only
where the course is out of the submissions' reach.

As root (CI): the grader's own tests of the seccomp tier's user (tests/kit/sandbox/test_root.py) and of a
container (tests/kit/container/test_container.py) go further."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import isolation
from tests.kit import seccomp
from tests.kit.conftest import ROOT, SOLUTIONS, full_marks, scores
from tests.kit.sandbox.test_cli import one_line_error

pytestmark = [pytest.mark.skipif(not seccomp.SUPPORTED, reason="the refusals are an x86-64 Linux filter"),
              pytest.mark.skipif("error" in isolation.confinement(),
                                 reason=f"no seccomp tier here: {isolation.confinement().get('error')}")]


def grade(*args: str, landlock: bool = True, filters: bool = True, env: dict | None = None,
          cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python -m grader ARGS` where namespaces are refused, and Landlock or seccomp filters too."""
    environ = {**{k: v for k, v in os.environ.items() if k != isolation.ENV_VAR}, "NO_COLOR": "1", "TERM": "dumb",
               "COLUMNS": "100", **(env or {})}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=600, preexec_fn=seccomp.refusing(landlock=landlock, seccomp=filters))


def doctor_rows(proc: subprocess.CompletedProcess) -> dict[str, str]:
    assert proc.returncode == 0, proc.stderr
    return {line.split("│")[1].strip(): line for line in proc.stdout.splitlines() if line.count("│") >= 3}


def test_without_landlock_auto_takes_the_seccomp_tier_and_says_what_it_lacks():
    proc = grade("assignment1", "--submission", str(SOLUTIONS), "--json", "-", landlock=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["isolation"] == "seccomp" and "no Landlock" in report["isolation_detail"]
    assert scores(report) == full_marks(report)
    rows = doctor_rows(grade("doctor", landlock=False))
    assert "refused" in rows["namespaces"] and "works" in rows["seccomp"]
    assert "none" in rows["Landlock"] and "no Landlock" in rows["Landlock"]


def test_without_seccomp_filters_auto_takes_the_process_tier_and_seccomp_asked_for_is_one_line():
    rows = doctor_rows(grade("doctor", filters=False))
    assert "refused" in rows["namespaces"] and "refused" in rows["seccomp"] and "works" in rows["process"]
    one_line_error(grade("assignment1", "--submission", str(SOLUTIONS), filters=False,
                         env={isolation.ENV_VAR: "seccomp"}), "seccomp")
    one_line_error(grade("assignment1", "--submission", str(SOLUTIONS), env={isolation.ENV_VAR: "namespaces"}),
                   "namespaces")


@pytest.mark.needs("root")  # a root grader's submissions run as a user of their own
def test_a_batch_without_landlock_refuses_a_course_every_user_can_read(tmp_path):
    """As root without Landlock the submission is another user, who reads what every user may: the
    kit's checkout (world-readable here) would be in its reach. The refusal names the folder."""
    if not isolation._reachable_by_others(ROOT / "solutions"):
        pytest.skip(f"{ROOT} is not readable by every user here")
    (tmp_path / "class" / "ada").mkdir(parents=True)
    proc = grade("batch", str(tmp_path / "class"), "--assignment", "assignment1", "--out", str(tmp_path / "out"),
                 landlock=False)
    one_line_error(proc, "readable by every user")
    assert "--unsafe-process-isolation" in proc.stderr


def test_whether_others_can_reach_a_folder_follows_every_folder_above_it():
    top = Path(tempfile.mkdtemp())  # in the temporary folder, which every user may cross
    try:
        inner = top / "a" / "b"
        inner.mkdir(parents=True)
        for folder in (top, top / "a", inner):
            folder.chmod(0o755)
        assert isolation._reachable_by_others(inner)
        (top / "a").chmod(0o750)
        assert not isolation._reachable_by_others(inner)
        assert not isolation._reachable_by_others(top / "a")
        assert isolation._reachable_by_others(top)
    finally:
        shutil.rmtree(top)
