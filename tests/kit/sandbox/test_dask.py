"""`grade batch --scheduler` on a real Dask cluster, started as the README tells instructors to:
`dask scheduler` and `dask worker` from a shell in a folder outside the kit, with a clean
environment (nothing on PYTHONPATH, nothing of the kit's test process inherited)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.kit.conftest import ROOT, SOLUTIONS, mutant, run_grade

LN_BUG = {"assignment1/layer_norm.py": [("unbiased=False", "unbiased=True")]}


def read_grades(path: Path) -> list[str]:
    return path.read_text().splitlines()


def start(*args: str, cwd: Path, log: Path) -> subprocess.Popen:
    """A process as a shell starts it: the installed command, PATH and HOME only."""
    bin_dir = Path(sys.executable).parent
    # PYTHONFAULTHANDLER: a process of the cluster that hangs writes its threads' stacks to its log on
    # SIGABRT (`stacks`)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8", "PYTHONFAULTHANDLER": "1"}
    with open(log, "w") as out:
        return subprocess.Popen([str(bin_dir / args[0]), *args[1:]], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stacks(proc: subprocess.Popen) -> None:
    """The Python stacks of every thread of `proc` and of the processes of its session, into their log."""
    try:
        os.killpg(proc.pid, signal.SIGABRT)
    except OSError:
        pass
    time.sleep(2)


def scheduler_address(log: Path, proc: subprocess.Popen, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"Scheduler at:\s+(tcp://\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"dask scheduler did not start:\n{log.read_text()[-2000:]}")


def test_a_dask_cluster_started_from_a_shell_grades_as_the_local_pool_does(tmp_path, quick_course):
    root = tmp_path / "class"
    shutil.copytree(SOLUTIONS, root / "correct", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(mutant(tmp_path / "p", LN_BUG), root / "partial")
    broken = shutil.copytree(SOLUTIONS, root / "syntax_error", ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "assignment1" / "embedding.py").write_text("class TokenEmbedding(:\n")
    local = run_grade("batch", str(root), "--assignment", "assignment1", "--out", str(tmp_path / "local"),
                      "--course", str(quick_course))
    assert local.returncode == 0, local.stderr[-2000:]

    shell = tmp_path / "elsewhere"  # outside the kit: nothing of it on sys.path by accident
    shell.mkdir()
    assert not shell.resolve().is_relative_to(ROOT)
    scheduler = start("dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", cwd=shell,
                      log=tmp_path / "scheduler.log")
    worker = None
    try:
        address = scheduler_address(tmp_path / "scheduler.log", scheduler)
        worker = start("dask", "worker", address, "--nworkers", "1", "--nthreads", "1", "--memory-limit", "0",
                       "--no-dashboard", cwd=shell, log=tmp_path / "worker.log")
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(1, timeout=180)
        try:  # about 20 s; one run of 2026-11-30's CI hung here, its worker silent for ten minutes
            remote = run_grade("batch", str(root), "--assignment", "assignment1", "--out", str(tmp_path / "dask"),
                               "--course", str(quick_course), "--scheduler", address, timeout=300)
        except subprocess.TimeoutExpired:
            stacks(worker)
            raise AssertionError("grade batch --scheduler hung; the worker's stacks:\n"
                                 + (tmp_path / "worker.log").read_text()[-12000:]) from None
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    log = (tmp_path / "worker.log").read_text()
    assert remote.returncode == 0, (remote.stdout + remote.stderr)[-3000:] + log[-2000:]
    assert read_grades(tmp_path / "dask" / "grades.csv") == read_grades(tmp_path / "local" / "grades.csv")
    for student in ("correct", "partial", "syntax_error"):
        a, b = (json.loads((tmp_path / run / "reports" / f"{student}.json").read_text()) for run in ("local", "dask"))
        assert b["isolation"] == a["isolation"]
        assert [(t["id"], t["status"]) for c in a["components"] for t in c["tests"]] == \
               [(t["id"], t["status"]) for c in b["components"] for t in c["tests"]]
    assert "ModuleNotFoundError" not in log
