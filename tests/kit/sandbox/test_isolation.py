"""Hostile submissions against the namespaces sandbox: what they attack is out of reach, and honest parts
keep their points.

Each hostile LayerNorm runs its attack when its module is imported and, where the attack gets through,
answers zeros from then on: a leak shows as lost LayerNorm points, besides what the test checks outside.
"""

import hashlib
import os
import shutil
import site
import socket
import time
import uuid
from pathlib import Path

import pytest

from grader.sandbox import isolation
from tests.kit.conftest import ROOT, SOLUTIONS, cli_json, cmdline, earned, full_marks, mutant, scores

pytestmark = pytest.mark.skipif(bool(isolation.unavailable()),
                                reason=f"no namespaces here: {isolation.unavailable()}")

DOCSTRING_END = '"""\n\nimport torch'
FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
LAYER_NORM = "assignment1/layer_norm.py"


def hostile(tmp_path: Path, attack: str, name: str = "submission") -> Path:
    """The solutions with `attack` run at import of layer_norm.py; it sets LEAK when it gets through."""
    code = "\n".join("    " + line for line in attack.strip("\n").splitlines())
    prelude = f'"""\n\nimport os, sys\nLEAK = False\ntry:\n{code}\nexcept Exception as e:\n    print("refused:", e)\n'
    tree = mutant(tmp_path / name, {LAYER_NORM: [(DOCSTRING_END, prelude + "\nimport torch"),
                                                 (FORWARD, FORWARD + "        if LEAK:\n"
                                                                     "            return torch.zeros_like(x)\n")]})
    return tree


def assert_full_marks(report: dict):
    """Nothing got through (LEAK stayed False): every check passes. An attack that forks or reaches
    ctypes is flagged, its points held at 0 for review under the default policy: what its checks earned."""
    assert report["isolation"] == "namespaces"
    assert earned(report) == full_marks(report)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_kit_is_out_of_reach(tmp_path):
    secrets = [SOLUTIONS / LAYER_NORM, ROOT / "course.toml", ROOT / "tests/grading/hidden/test_assignment1.py"]
    attack = f"""
for path in {[str(p) for p in secrets]!r}:
    try:
        open(path).read()
        LEAK = True
    except OSError as e:
        print("refused:", e)
"""
    assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1"))


def test_a_daemon_dies_with_the_sandbox(tmp_path):
    tag, marker = f"daemon-{uuid.uuid4().hex}", tmp_path / "marker"
    attack = f"""
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import sys, time; time.sleep(2); "
                                  "open(sys.argv[1], 'w').write('alive')", {str(marker)!r}, {tag!r}])
    os._exit(0)
"""
    assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1"))
    time.sleep(2.5)
    assert not marker.exists()
    alive = [p for p in os.listdir("/proc") if p.isdigit() and cmdline(p).count(tag.encode())]
    assert not alive, f"the daemon outlived grading: pids {alive}"



def test_writes_outside_its_folder_change_nothing_and_its_folder_is_capped(tmp_path):
    """Aimed at a disposable copy of the kit and at a harmless name in site-packages: a regression must
    not damage the checkout or leave a .pth in its environment."""
    kit = tmp_path / "kit"
    shutil.copytree(SOLUTIONS, kit / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "course.toml").read_text().replace('suites = "', f'suites = "{ROOT}/')
    (kit / "course.toml").write_text(text.replace('assignments = "', f'assignments = "{ROOT}/'))
    name = f"hostile-{uuid.uuid4().hex}.txt"
    planted = Path(site.getsitepackages()[0]) / name
    kept = [kit / "course.toml", kit / "solutions" / LAYER_NORM]
    before = [digest(p) for p in kept]
    attack = f"""
import sysconfig
for path in [os.path.join(sysconfig.get_paths()["purelib"], {name!r}), *{[str(p) for p in kept]!r}]:
    try:
        with open(path, "a") as f:
            f.write("# planted")
        LEAK = True
    except OSError as e:
        print("refused:", e)
try:
    for i in range(5):  # 5 x 16 MiB (file_size_mb) is over scratch_mb = 64
        with open(f"fill-{{i}}", "wb") as f:
            f.write(bytes(16 << 20))
    LEAK = True
except OSError as e:
    print("refused:", e)
"""
    try:
        assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1", "--course", str(kit / "course.toml")))
    finally:
        planted.unlink(missing_ok=True)
    assert [digest(p) for p in kept] == before


def test_no_network(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        attack = f"""
import socket
with socket.create_connection(("127.0.0.1", {listener.getsockname()[1]}), timeout=2) as s:
    s.sendall(b"leak")
LEAK = True
"""
        assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1"))
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_the_grader_processes_are_invisible(tmp_path):
    """The worker's parent is the namespace's init, which ignores its signals; the grader and this
    test (its parent) have no /proc entry inside."""
    attack = f"""
import signal
os.kill(os.getppid(), signal.SIGKILL)
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    if b"-m\\x00grader\\x00" in open(f"/proc/{{pid}}/cmdline", "rb").read():
        LEAK = True
LEAK = LEAK or os.path.exists("/proc/{os.getpid()}")
"""
    assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1"))


def test_the_kernels_knobs_are_read_only_and_proc_self_is_not(tmp_path):
    """/proc/sys stays read-only (a nested user namespace would give the submission mounts of its
    own); the rest of /proc is writable, as CUDA's driver needs (a read-only /proc failed
    cudaGetDeviceCount with error 304 on an H100): a thread names itself through /proc/self."""
    attack = """
with open("/proc/self/comm", "w") as f:
    f.write("named")
if open("/proc/self/comm").read().strip() != "named":
    raise SystemExit("/proc/self is not writable")
for knob in ("/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/shmmax"):
    try:
        with open(knob, "w") as f:
            f.write("1000")
        LEAK = True
    except OSError as e:
        print("refused:", knob, e)
"""
    assert_full_marks(cli_json(hostile(tmp_path, attack), "assignment1"))


def test_nothing_is_left_for_the_next_submission(tmp_path):
    tag = uuid.uuid4().hex
    places = [f"/tmp/{tag}", f"/dev/shm/{tag}", f"~/.cache/{tag}"]
    key = int(tag[:7], 16)  # a SysV shared memory segment: the IPC namespace is private
    shm = "import ctypes\nlibc = ctypes.CDLL(None)\n"
    leave = shm + f"""
for path in {places!r}:
    path = os.path.expanduser(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").write("import os; os.system('...')")
libc.shmget({key}, 4096, 0o1600)
"""
    find = shm + f"""
LEAK = any(os.path.exists(os.path.expanduser(p)) for p in {places!r})
if libc.shmget({key}, 0, 0) >= 0:
    LEAK = True
    libc.shmctl(libc.shmget({key}, 0, 0), 0, None)
"""
    try:
        assert_full_marks(cli_json(hostile(tmp_path, leave, "first"), "assignment1"))
        assert_full_marks(cli_json(hostile(tmp_path, find, "second"), "assignment1"))
    finally:
        for path in places[:2]:
            Path(path).unlink(missing_ok=True)


def test_without_namespaces_grading_still_works(monkeypatch):
    monkeypatch.setenv(isolation.ENV_VAR, "process")
    report = cli_json(SOLUTIONS, "assignment1")
    assert report["isolation"] == "process"
    assert scores(report) == full_marks(report)
