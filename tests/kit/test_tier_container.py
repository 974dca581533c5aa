"""Gradescope's container with Gradescope's default limits (issue 43, item 7), for real: the
container of tests/kit/test_container.py (Docker's default seccomp profile, root, the default zip,
setup.sh, run_autograder) made with `--memory 768m --cpus 0.5`.

The reference earns full marks there. A LayerNorm whose module spreads its allocations over
several processes (each under the per-process RLIMIT_AS) got the whole container OOM-killed, the
grader with it, and no results.json was written; now the watcher (grader.sandbox.child.watcher)
stops the worker's processes once they hold what the container had left, and the kernel's OOM
killer takes the worker's first (oom_score_adj 1000): results.json is written, LayerNorm charged,
every other component full marks.
"""

import json
import os
import stat
import uuid
import zipfile

import pytest

from tests.kit import docker
from tests.kit.conftest import SOLUTIONS, run_grade
from tests.kit.test_container import ASSIGNMENT, SOURCE, WHY, component_scores, sh
from tests.kit.test_isolation import hostile

pytestmark = [pytest.mark.xdist_group("docker"),
              pytest.mark.skipif(bool(WHY) and not os.environ.get("CI"), reason=f"no Docker here: {WHY}")]
LIMITS = ("--memory", "768m", "--cpus", "0.5")  # Gradescope's defaults
# sixteen small processes of 56 MiB each (a fresh interpreter each, every page touched), each far
# smaller than the grader, held while LayerNorm's checks run: the OOM killer's pick was the grader
SPREAD = """
import subprocess, time
HOLD = ("import mmap, time\\nb = mmap.mmap(-1, 56 << 20)\\nfor i in range(0, 56 << 20, 4096):\\n    b[i] = 1\\n"
        "time.sleep(900)")
children = [subprocess.Popen([sys.executable, "-I", "-S", "-c", HOLD]) for _ in range(16)]
time.sleep(15)
LEAK = True
"""


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """A container with Gradescope's limits that has run setup.sh: its name."""
    if WHY:
        pytest.fail(f"CI runs these with Docker: {WHY}")
    image = docker.base_image()
    base = tmp_path_factory.mktemp("limited")
    proc = run_grade("gradescope", str(base / "upload"), "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    source = base / "source"
    with zipfile.ZipFile(base / "upload" / "autograder.zip") as z:
        z.extractall(source)
        for info in z.infolist():
            os.chmod(source / info.filename, stat.S_IMODE(info.external_attr >> 16))
    name = f"kit-gradescope-limits-{uuid.uuid4().hex[:12]}"
    docker.docker("create", "--name", name, "--network", "host", *LIMITS, *docker.pip_settings(),
                  "-e", "AUTOGRADER_TORCH_INDEX=", image, "sleep", "infinity")
    try:
        docker.docker("start", name)
        docker.docker("exec", name, "mkdir", "-p", "/autograder/submission", "/autograder/results")
        docker.docker("cp", f"{source}/.", f"{name}:{SOURCE}")
        setup = docker.docker("exec", "-w", SOURCE, name, "bash", "setup.sh", check=False, timeout=1800)
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
        sh(name, f"cp {SOURCE}/run_autograder /autograder/run_autograder")
        yield name
    finally:
        docker.docker("rm", "-f", name, check=False)


def run_autograder(name: str, tree) -> tuple[dict | None, str]:
    """results.json (None where none was written) and what run_autograder printed."""
    sh(name, "rm -rf /autograder/submission/* /autograder/results/*")
    docker.docker("cp", str(tree / ASSIGNMENT), f"{name}:/autograder/submission/{ASSIGNMENT}")
    ran = docker.docker("exec", "-w", "/tmp", name, "/autograder/run_autograder", check=False, timeout=1500)
    got = docker.docker("exec", name, "cat", "/autograder/results/results.json", check=False)
    return (json.loads(got.stdout) if got.returncode == 0 else None), ran.stdout[-2000:] + ran.stderr[-2000:]


def test_the_reference_earns_full_marks_within_gradescopes_limits(limited):
    data, printed = run_autograder(limited, SOLUTIONS)
    assert data is not None and data["score"] == 40, printed


def test_memory_spread_over_processes_is_charged_and_results_are_written(limited, tmp_path):
    data, printed = run_autograder(limited, hostile(tmp_path, SPREAD))
    assert data is not None, f"no results.json: {printed}"
    got = component_scores(data)
    assert got["LayerNorm"] < 10 and sum(got.values()) == data["score"] >= 30, got
    assert {n: s for n, s in got.items() if n != "LayerNorm"} == {"PositionwiseFeedForward": 8.0,
                                                                  "PositionalEncoding": 10.0, "TokenEmbedding": 6.0,
                                                                  "TransformerEmbedding": 6.0}, got
    assert "stopped: its processes held" in json.dumps(data) or "killed" in json.dumps(data), data["output"][-2000:]
