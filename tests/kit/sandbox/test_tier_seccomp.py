"""The middle tier (seccomp + Landlock) closed (issue 43, item 6), for real: `grade` where the kernel
refuses namespaces (tests/kit/seccomp.py), as root and as a user (nobody, by setpriv).

- no new socket of any family once the worker runs: a pathname UNIX socket in /tmp (a session bus,
  ssh-agent, docker.sock are the same) was reached before;
- signals to the worker's own processes only, also where Landlock has no signal scope (ABI < 6,
  shown here with Landlock refused): another process of the grading user was reachable before;
- a root grader with a private TMPDIR (mode 0700) graded correct code 0 ("file is missing"); it now
  says in one line what to change.
Each attack sets LEAK in the solution's LayerNorm (tests/kit/sandbox/test_isolation.hostile): a LayerNorm
that keeps its points is an attack that failed.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from grader.sandbox import isolation
from tests.kit import needs, seccomp
from tests.kit.conftest import ROOT, SOLUTIONS, earned, full_marks, scores
from tests.kit.sandbox.test_isolation import hostile

pytestmark = [pytest.mark.skipif(not seccomp.SUPPORTED, reason="the refusals are an x86-64 Linux filter"),
              pytest.mark.skipif("error" in isolation.confinement(),
                                 reason=f"no seccomp tier here: {isolation.confinement().get('error')}")]
USERS = ["root", "nobody"] if os.geteuid() == 0 else ["user"]


def as_user(who: str) -> list[str]:
    """The prefix that runs a command as `who` (nobody: tests/kit/needs.as_nobody)."""
    return needs.as_nobody() if who == "nobody" else []


def grade_seccomp(tree: Path, who: str, *, landlock: bool = True, env: dict | None = None
                  ) -> subprocess.CompletedProcess:
    environ = {**{k: v for k, v in os.environ.items() if k != isolation.ENV_VAR}, "NO_COLOR": "1", "TERM": "dumb",
               "COLUMNS": "100", **(env or {})}
    argv = [*as_user(who), sys.executable, "-m", "grader", "assignment1", "--submission", str(tree), "--json", "-"]
    return subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600,
                          preexec_fn=seccomp.refusing(landlock=landlock))


def graded(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["isolation"] == "seccomp", report["isolation"]
    return report


def readable(tmp_path: Path) -> Path:
    """A folder every user reaches (the tree nobody grades, the socket it must not reach)."""
    folder = Path(tempfile.mkdtemp(prefix="grade-tier-"))
    folder.chmod(0o777)
    return folder


@pytest.mark.parametrize("who", USERS)
def test_no_socket_of_any_family_is_opened(tmp_path, who):
    folder = readable(tmp_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(folder / "bus"))
        (folder / "bus").chmod(0o777)
        server.listen(4)
        server.settimeout(1)
        reached: list[bytes] = []

        def serve():
            while not done.is_set():
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                reached.append(conn.recv(64))
                conn.close()
        done = threading.Event()
        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        attack = f"""
import socket
for family, address in ((socket.AF_UNIX, {str(folder / "bus")!r}), (socket.AF_UNIX, "\\0grade-abstract"),
                        (socket.AF_INET, ("127.0.0.1", 9)), (socket.AF_NETLINK, None)):
    try:
        s = socket.socket(family, socket.SOCK_STREAM if family != socket.AF_NETLINK else socket.SOCK_RAW)
        LEAK = True
        if family == socket.AF_UNIX and address.startswith("/"):
            s.connect(address)
            s.sendall(b"reached")
    except OSError as e:
        print("refused:", e)
try:
    socket.socketpair()
    LEAK = True
except OSError as e:
    print("refused:", e)
"""
        tree = hostile(folder, attack)
        report = graded(grade_seccomp(tree, who))
        done.set()
        thread.join(5)
        # what the checks earn: a flagged attack's points are held at 0 for review (the default policy)
        assert reached == [] and earned(report) == full_marks(report), (reached, earned(report))
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no_landlock"])
def test_signals_reach_only_the_workers_own_processes(tmp_path, landlock):
    """As the grading user (where it is root: nobody, whose other process is the victim): without
    Landlock's signal scope (ABI < 6, here refused) kill reached any process of that user."""
    who = "nobody" if os.geteuid() == 0 else "user"
    victim = subprocess.Popen([*as_user(who), "sleep", "120"])
    folder = readable(tmp_path)
    try:
        attack = f"""
import signal
for target in ({victim.pid}, -1, -{victim.pid}):
    try:
        os.kill(target, 0)  # the permission check of a signal, without the signal
        LEAK = True
    except OSError as e:
        print("refused:", e)
own = os.fork()
if own == 0:
    os._exit(0)
os.waitpid(own, 0)
os.kill(0, 0)  # its own group: allowed
os.kill(os.getpid(), 0)
"""
        report = graded(grade_seccomp(hostile(folder, attack), who, landlock=landlock))
        assert earned(report) == full_marks(report), earned(report)  # its fork: held for review
        assert victim.poll() is None
        if not landlock:
            assert "no Landlock" in report["isolation_detail"]
    finally:
        victim.kill()
        victim.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.needs("root")  # a root grader's submissions run as a user of their own
def test_a_root_grader_with_a_private_tmpdir_says_in_one_line_what_to_change(tmp_path):
    private = Path(tempfile.mkdtemp(prefix="grade-private-"))
    private.chmod(0o700)
    try:
        proc = grade_seccomp(SOLUTIONS, "root", env={"TMPDIR": str(private)})
        if proc.returncode == 0:  # graded: then right
            report = graded(proc)
            assert scores(report) == full_marks(report), scores(report)
        else:
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
            assert f"TMPDIR={private}" in lines[0] and "chmod o+x" in lines[0]
    finally:
        shutil.rmtree(private, ignore_errors=True)


# the disk: 400 MiB in files of 16 MiB (RLIMIT_FSIZE) into its folder, once per grading (`begun`)
FILLS_THE_DISK = """
if not os.path.exists("begun"):
    open("begun", "w").close()
    block = b"x" * (1 << 20)
    for n in range(25):
        with open(f"fill{n}", "wb") as f:
            for _ in range(16):
                f.write(block)
    LEAK = True
"""


@pytest.mark.parametrize("who", USERS)
def test_the_worker_is_stopped_past_scratch_mb(tmp_path, who):
    folder = readable(tmp_path)
    try:
        report = graded(grade_seccomp(hostile(folder, FILLS_THE_DISK), who))
        layer_norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
        # stopped and emptied each time it fills the disk: charged to the component whose code does
        assert "stopped: wrote more than scratch_mb" in json.dumps(layer_norm), layer_norm
        got, full = scores(report), full_marks(report)
        assert got["LayerNorm"] < full["LayerNorm"] and {n: s for n, s in got.items() if n != "LayerNorm"} == {
            n: s for n, s in full.items() if n != "LayerNorm"}, got
    finally:
        shutil.rmtree(folder, ignore_errors=True)
