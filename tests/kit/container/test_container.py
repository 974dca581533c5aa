"""The Gradescope autograder in a real Docker container made as Gradescope makes them (tests/kit/
docker.py): Docker's default seccomp profile, which refuses namespaces, root, the host's network.
`grade gradescope`'s default zip, unpacked at /autograder/source; setup.sh once, as Gradescope builds
the image; run_autograder per submission, under Gradescope's default limits (768 MB, half a CPU). A
submission whose processes together hold more than the container has gets its LayerNorm charged, and
results.json is written.
It grades in the seccomp tier, with no flag: the reference earns full marks, a one-bug
tree what `grade` gives it, and a hostile tree, every attack of which is refused, full marks (an
attack that gets through makes its LayerNorm answer zeros). Then the same container as `nobody`,
where the grader is not root: `grade` works, and the same attacks, a world-readable file outside
the kit's paths and a signal to the grader (its own user's) included, are refused.

CI installs Docker and debootstrap and starts the daemon (.ci/run); elsewhere these tests are
skipped where Docker is missing, and say why and how to get it (tests/kit/needs.py; under CI they fail)."""

import json
import os
import socket
import stat
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.kit import docker
from tests.kit.conftest import SOLUTIONS, earned, grade_json, mutant, run_grade
from tests.kit.sandbox.test_isolation import hostile

pytestmark = [pytest.mark.xdist_group("docker"), pytest.mark.needs("docker")]

ASSIGNMENT = "assignment1"
SOURCE = "/autograder/source"
VENV_SITE = "/autograder/venv/lib/python3.11/site-packages"
REFERENCE = f"{SOURCE}/course/reference/{ASSIGNMENT}/layer_norm.py"
HIDDEN = f"{SOURCE}/course/tests/grading/hidden/test_{ASSIGNMENT}.py"
OPEN_FILE = "/srv/open-to-all.txt"  # world-readable, outside every path the kit reads
KIT = "/srv/kit"  # the course, readable by nobody, for `grade` run as that user
DAEMON = "kit-daemon-left-behind"  # in the command line of the hostile tree's daemon
# Gradescope's defaults for a submission's run; setup.sh runs where Gradescope builds the image, without
# them (here: set by `docker update` between the two, the swap as `docker create --memory` sets it)
LIMITS = ("--memory", "768m", "--memory-swap", "1536m", "--cpus", "0.5")
# sixteen fresh interpreters of 56 MiB each (every page touched), each far smaller than the grader,
# held while LayerNorm's checks run: the container was OOM-killed, the grader its pick (no results);
# then the watcher stopped them; now the worker refuses to start them (grader.sandbox.child.processes)
SPREAD = """
import subprocess, time
HOLD = ("import mmap, time\\nb = mmap.mmap(-1, 56 << 20)\\nfor i in range(0, 56 << 20, 4096):\\n    b[i] = 1\\n"
        "time.sleep(900)")
children = [subprocess.Popen([sys.executable, "-I", "-S", "-c", HOLD]) for _ in range(16)]
time.sleep(15)
LEAK = True
"""


def attacks(port: int, planted: str) -> str:
    """Each attack in turn; one that gets through sets LEAK (its LayerNorm then answers zeros)."""
    return f"""
import ctypes, signal, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def seize(pid):
    # PTRACE_SEIZE does not stop the grader; the child that seized it detaches it by exiting
    r, w = os.pipe()
    if os.fork() == 0:
        os.write(w, b"1" if libc.ptrace(0x4206, pid, 0, 0) == 0 else b"0")
        os._exit(0)
    os.close(w)
    return os.read(r, 1) == b"1"
def daemon():
    # a new session, then a grandchild whose parent exits: judged from outside (`survivors`)
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:
            os._exit(0)
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {DAEMON!r}])
        os._exit(0)
    os.wait()
    return False
def attempt(what, action):
    global LEAK
    try:
        if action() is False:
            print("refused:", what)
            return
    except Exception as e:
        print("refused:", what, e)
        return
    print("GOT THROUGH:", what)
    LEAK = True
attempt("read the reference", lambda: open({REFERENCE!r}).read())
attempt("read the hidden suite", lambda: open({HIDDEN!r}).read())
attempt("read the reference every user may", lambda: open({KIT + "/reference/assignment1/layer_norm.py"!r}).read())
attempt("read a file every user may", lambda: open({OPEN_FILE!r}).read())
attempt("connect to the host's loopback", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
attempt("open an IPv6 socket", lambda: socket.socket(socket.AF_INET6))
attempt("open a netlink socket", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
attempt("write results.json", lambda: open("/autograder/results/results.json", "w").write('{{"score": 1000}}'))
attempt("write into the venv", lambda: open({planted!r}, "w").write("import os"))
attempt("signal the grader", lambda: os.kill(os.getppid(), 0))
attempt("signal every process of its user", lambda: os.kill(-1, 0))
attempt("ptrace the grader", lambda: seize(os.getppid()))
attempt("read the grader's memory", lambda: open(f"/proc/{{os.getppid()}}/mem", "rb").read(1))
attempt("make a user namespace", lambda: libc.unshare(0x10000000) == 0)
attempt("set up io_uring", lambda: libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0)
attempt("leave a daemon behind", daemon)
"""


@pytest.fixture(scope="module")
def container(tmp_path_factory):
    """A container that has run setup.sh, with run_autograder at /autograder: its name."""
    image = docker.base_image()
    base = tmp_path_factory.mktemp("container")
    proc = run_grade("gradescope", str(base / "upload"), "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    source = base / "source"
    with zipfile.ZipFile(base / "upload" / "autograder.zip") as z:
        z.extractall(source)
        for info in z.infolist():
            os.chmod(source / info.filename, stat.S_IMODE(info.external_attr >> 16))
    name = f"kit-gradescope-{uuid.uuid4().hex[:12]}"
    # no --security-opt: Docker's default seccomp profile, as on Gradescope; its default limits once setup.sh ran
    docker.docker("create", "--name", name, "--network", "host", *docker.pip_settings(),
                  "-e", "AUTOGRADER_TORCH_INDEX=", image, "sleep", "infinity")
    try:
        docker.docker("start", name)
        docker.docker("exec", name, "mkdir", "-p", "/autograder/submission", "/autograder/results", "/srv")
        docker.docker("cp", f"{source}/.", f"{name}:{SOURCE}")
        setup = docker.docker("exec", "-w", SOURCE, name, "bash", "setup.sh", check=False, timeout=1800)
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
        docker.docker("update", *LIMITS, name)
        limits = "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.NanoCpus}}"
        held = docker.docker("inspect", "-f", limits, name).stdout.split()
        assert held == [str(768 << 20), str(1536 << 20), str(5 * 10**8)], held
        sh(name, f"cp {SOURCE}/run_autograder /autograder/run_autograder && echo open > {OPEN_FILE} && "
                 f"chmod 644 {OPEN_FILE} && cp -r {SOURCE}/course {KIT} && chmod -R a+rX {KIT}")
        yield name
    finally:
        docker.docker("rm", "-f", name, check=False)


def sh(name: str, command: str, user: str = "root", timeout: float = 300):
    """`command` in the container, by bash, as `user` (runuser: no password, no new privileges)."""
    argv = ["bash", "-c", command] if user == "root" else ["runuser", "-u", user, "--", "bash", "-c", command]
    return docker.docker("exec", "-w", "/tmp", name, *argv, timeout=timeout)


def run_autograder(name: str, tree: Path, check: bool = True) -> dict:
    """Hand in `tree`'s assignment folder, run /autograder/run_autograder, return results.json ({}
    where none was written, with `check` False)."""
    sh(name, "rm -rf /autograder/submission/* /autograder/results/*")
    docker.docker("cp", str(tree / ASSIGNMENT), f"{name}:/autograder/submission/{ASSIGNMENT}")
    docker.docker("exec", "-w", "/tmp", name, "/autograder/run_autograder", check=check, timeout=1500)
    got = docker.docker("exec", name, "cat", "/autograder/results/results.json", check=check)
    return json.loads(got.stdout) if got.returncode == 0 else {}


def survivors(name: str) -> list[str]:
    """The hostile daemons still alive in the container (each killed, once counted)."""
    found = sh(name, "python3 -c \"import os, sys; print(' '.join(p for p in os.listdir('/proc') if p.isdigit() and "
                     f"b'{DAEMON}' in open(f'/proc/{{p}}/cmdline', 'rb').read() and int(p) != os.getpid()))\"")
    pids = found.stdout.split()
    if pids:
        sh(name, f"kill -9 {' '.join(pids)} || true")
    return pids


def component_scores(data: dict) -> dict[str, float]:
    return {t["name"]: t["score"] for t in data["tests"] if t["visibility"] == "visible"}


def test_the_default_zip_grades_the_reference_to_full_marks_in_the_seccomp_tier(container):
    data = run_autograder(container, SOLUTIONS)
    assert data["score"] == 40, data["output"]
    assert "Isolation: seccomp + Landlock" in data["output"], data["output"]
    assert "no network or ptrace" in data["output"]


def test_a_one_bug_tree_scores_what_grade_gives_it(container, tmp_path):
    from tests.grading.bugs import BUGS

    tree = mutant(tmp_path, BUGS["layer_norm_unbiased_variance"].patches)
    expected = grade_json(tree, ASSIGNMENT)
    data = run_autograder(container, tree)
    assert data["score"] == expected["score"] < expected["max_score"]
    assert component_scores(data) == {c["name"]: c["score"] for c in expected["components"]}


def test_every_attack_of_a_hostile_submission_is_refused_as_root(container, tmp_path):
    planted = f"{VENV_SITE}/planted-{uuid.uuid4().hex}.pth"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        data = run_autograder(container, hostile(tmp_path, attacks(listener.getsockname()[1], planted)))
        with pytest.raises(BlockingIOError):
            listener.accept()
    # every check passes; its ctypes and fork are flagged: LayerNorm's points held for review (the default)
    held = sum(t.get("extra_data", {}).get("held", 0) for t in data["tests"])
    assert data["score"] + held == 40, data["output"] + json.dumps(data["tests"])[-3000:]
    assert sh(container, f"test -e {planted} || echo absent").stdout.strip() == "absent"
    assert survivors(container) == []


def test_memory_spread_over_processes_is_refused_and_results_are_written(container, tmp_path):
    """RLIMIT_AS bounds each process alone, so memory spread over processes is refused at their start
    (grader.sandbox.child.processes); where a start got through, the watcher (grader.sandbox.child.
    watcher) would bound them together below the container's limit, and the OOM killer would take the
    worker's first."""
    data = run_autograder(container, hostile(tmp_path, SPREAD), check=False)
    assert data, "no results.json"
    # no child started (the attack's LEAK stays unset: LayerNorm's checks pass, its points held for review,
    # as `subprocess` is flagged); the grader wrote results.json and nothing is left running
    got = component_scores(data)
    assert got.pop("LayerNorm") < 10 and got == {"PositionwiseFeedForward": 8.0, "PositionalEncoding": 10.0,
                                                 "TokenEmbedding": 6.0, "TransformerEmbedding": 6.0}, got
    assert survivors(container) == []


def grade_as_nobody(name: str, tmp_path: Path, tier: str) -> tuple[dict, bool]:
    """`grade` of the hostile tree as nobody with GRADER_ISOLATION=`tier`: the JSON report, and
    whether a connection reached the host's loopback."""
    planted = f"{VENV_SITE}/planted-{uuid.uuid4().hex}.pth"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        tree = hostile(tmp_path / tier, attacks(listener.getsockname()[1], planted))
        sh(name, "rm -rf /tmp/student && mkdir /tmp/student")
        docker.docker("cp", str(tree / ASSIGNMENT), f"{name}:/tmp/student/{ASSIGNMENT}")
        sh(name, "chmod -R a+rX /tmp/student")
        proc = sh(name, f"HOME=/tmp GRADER_ISOLATION={tier} /autograder/venv/bin/grade {ASSIGNMENT} "
                        f"--submission /tmp/student --course {KIT}/course.toml --json -", user="nobody")
        try:
            listener.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
    sh(name, f"rm -f {planted}")  # the process tier's: as nobody it cannot write root's venv, but to be sure
    return json.loads(proc.stdout), connected


def test_as_nobody_grade_works_and_every_attack_is_refused(container, tmp_path):
    """The grader runs as nobody (not root: no user of its own for the submission), namespaces refused.
    The control: the same tree in the process tier gets through (the attacks are live), but its
    daemon ends with the grading there too: the grading process is its subreaper (grader.sandbox.reap)."""
    report, connected = grade_as_nobody(container, tmp_path, "auto")
    assert report["isolation"] == "seccomp" and "Landlock" in report["isolation_detail"]
    assert not connected
    # what the checks earned (the attacks' ctypes and fork hold LayerNorm's points for review: the default)
    assert earned(report) == {c["name"]: c["max_score"] for c in report["components"]}, json.dumps(report)[-3000:]
    assert survivors(container) == []
    report, connected = grade_as_nobody(container, tmp_path, "process")
    assert connected and earned(report)["LayerNorm"] < 10
    assert survivors(container) == []  # no uid of its own, but the orphan comes back to the grader


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_grade_doctor_names_each_tier_and_why(container, user):
    out = sh(container, f"HOME=/tmp COLUMNS=100 /autograder/venv/bin/grade doctor --course {KIT}/course.toml",
             user=user).stdout
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 3}
    assert "refused" in lines["namespaces"] and "unshare" in lines["namespaces"], out
    assert "works" in lines["seccomp"], out
    assert "ABI" in lines["Landlock"], out
    assert "grading here: seccomp" in out
