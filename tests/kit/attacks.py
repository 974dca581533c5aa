"""The shipped adversarial suite: hostile submissions, one attack each (tests/kit/sandbox/test_adversarial.py).

Each attack is a copy of solutions/ with one change. `keeps` says what the attacked
component's checks may earn: True when the attack changes nothing that component computes (its
honest code still earns full marks), False when the attack replaces its honest work (it
must lose points). `flagged`: the attack reaches dynamically (os.fork, gc, frames, exec: grader.judging.
forbidden flags it), so that under the default `[policy] flagged = "hold"` the component's points are
held at 0 for review whatever its checks earn. Every other component must keep every point either way.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from grader.findings import Evasion
from tests.kit.conftest import mutant

LN, FFN, PE, EMB = ("assignment1/layer_norm.py", "assignment1/feed_forward.py", "assignment1/positional_encoding.py",
                    "assignment1/embedding.py")
FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
PROBE_PORT = 47_613  # a loopback listener the network attack tries to reach (tests/kit/sandbox/test_adversarial.py)


@dataclass(frozen=True)
class Attack:
    component: str
    keeps: bool  # the attacked component still earns full marks
    file: str = LN
    forward: str = ""  # code run at the start of the component's forward
    module: str = ""  # code run when the component's file is imported
    extra: dict[str, str] = field(default_factory=dict)  # files added to the submission (path -> text)
    link: tuple[str, str] = ("", "")  # (path in the submission, target): a symbolic link
    # only a confining tier stops it: namespaces, or seccomp where the course is out of its reach (the
    # security page says the process tier has resource limits only)
    needs_confinement: bool = False
    flagged: tuple[str, ...] = ()  # what grader.judging.forbidden flags in it (its points held for review)


DETACH = """import os, time
def _detach(orphan):
    try:
        pid = os.fork()
    except OSError:  # refused by the worker (grader.sandbox.child.processes)
        return
    if pid:
        if orphan:
            os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if orphan and os.fork():
            os._exit(0)
        time.sleep(120)
    finally:
        os._exit(0)
_detach(False)
_detach(True)
"""


def _ln(code: str, keeps: bool = False, flagged: tuple[str, ...] = ()) -> Attack:
    return Attack("LayerNorm", keeps, forward=code, flagged=flagged)


ATTACKS: dict[str, Attack] = {
    # forging the verdict
    "exits_with_status_0_at_import": Attack("LayerNorm", False, module="import os\nos._exit(0)\n"),
    "pytest_exit_in_forward": _ln("import pytest\npytest.exit('all good', returncode=0)\n"),
    "pytest_skip_in_forward": _ln("import pytest\npytest.skip('nothing to see')\n"),
    "pytest_xfail_in_forward": _ln("import pytest\npytest.xfail('expected')\n"),
    "patches_the_comparisons_and_returns_zeros": _ln(
        "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\nreturn torch.zeros_like(x)\n"),
    "atexit_writes_a_forged_report": Attack("LayerNorm", True, module=(
        "import atexit, json, os\n"
        "atexit.register(lambda: print(json.dumps({'score': 40, 'max_score': 40, 'components': []})))\n"
        "atexit.register(lambda: open(os.path.expanduser('~/report.json'), 'w').write('{\"score\": 40}'))\n")),
    "prints_fake_json": _ln("print('{\"assignment\": \"assignment1\", \"score\": 40, \"max_score\": 40}')\n",
                            keeps=True),
    "writes_garbage_to_the_grader_pipe": _ln(
        "import os, sys\nfd = int(sys.argv[3])\nos.write(fd, b'\\x80\\x04\\x95 pickled verdict: full marks')\n"),
    # reading the answer
    "walks_the_stack_for_expected_values": _ln(
        "import sys\nf = sys._getframe()\nwhile f is not None:\n"
        "    for v in list(f.f_locals.values()):\n"
        "        if isinstance(v, dict) and 'expected' in v:\n            return v['expected']\n"
        "    f = f.f_back\nreturn torch.zeros_like(x)\n", flagged=("sys._getframe", "frame inspection")),
    "searches_gc_for_tensors_of_the_right_shape": _ln(
        "import gc\nfor o in gc.get_objects():\n"
        "    if type(o) is torch.Tensor and o.shape == x.shape and o is not x and not o.requires_grad:\n"
        "        return o.clone()\nreturn torch.zeros_like(x)\n",
        flagged=("gc", Evasion.DEVICE_TELL)),  # and `type(o) is torch.Tensor` tells a placed run's tensors
    "reads_the_solution_through_the_graders_cwd": Attack("LayerNorm", False, needs_confinement=True,
                                                         flagged=("exec", "compile"), forward=(
        "import os\np = f'/proc/{os.getppid()}/cwd/solutions/assignment1/layer_norm.py'\n"
        "try:\n    g = {}\n    exec(compile(open(p).read(), p, 'exec'), g)\n"
        "    return g['LayerNorm'].forward(self, x)\nexcept Exception:\n    return torch.zeros_like(x)\n")),
    # fooling comparisons
    "returns_an_always_equal_object": _ln(
        "class Equal:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
        "return Equal()\n"),
    "returns_a_tensor_subclass_that_lies": _ln(
        "class Liar(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n"
        "return torch.zeros_like(x).as_subclass(Liar)\n"),
    "returns_a_broadcastable_shape": _ln("return torch.zeros(x.shape[-1])\n"),
    "mutates_its_input": _ln("out = torch.zeros_like(x)\nx.copy_(out)\nreturn out\n"),
    "poisons_its_weights_on_every_call": _ln(
        "with torch.no_grad():\n    self.gamma.zero_()\n    self.beta.zero_()\n"),
    "sets_global_state_at_import": Attack("LayerNorm", True, module=(
        "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_grad_enabled(False)\n"
        "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n")),
    # weakening Hypothesis
    "loads_a_hypothesis_profile": Attack("LayerNorm", True, module=(
        "try:\n    import hypothesis\n"
        "    hypothesis.settings.register_profile('weak', max_examples=1)\n"
        "    hypothesis.settings.load_profile('weak')\nexcept Exception:\n    pass\n")),
    "leaves_an_example_database": Attack("LayerNorm", True, module=(
        "import os\nfor d in ('.hypothesis/examples', os.path.expanduser('~/.hypothesis/examples')):\n"
        "    os.makedirs(d, exist_ok=True)\n    open(os.path.join(d, 'x'), 'wb').write(b'\\0' * 64)\n")),
    # detecting the grader
    "behaves_only_when_not_graded": _ln(  # what it does under grading is what it earns
        "import sys\nif sys.flags.isolated:  # the grader starts its worker with python -I\n"
        "    return torch.zeros_like(x)\n"),
    # resources
    "hangs_ignoring_signals": Attack("PositionwiseFeedForward", False, file=FFN, forward=(
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n"
        "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n")),
    "allocates_a_terabyte": Attack("PositionalEncoding", False, file=PE, forward="hog = torch.ones(1 << 40)\n"),
    # bounded on purpose: the kit's tests may run as root, where RLIMIT_NPROC does not hold
    "forks_hundreds_of_sleepers": _ln("import os, time\nfor _ in range(300):\n    if os.fork() == 0:\n"
                                      "        time.sleep(60)\n        os._exit(0)\nreturn torch.zeros_like(x)\n",
                                      flagged=("os.fork",)),
    "floods_its_output": _ln("import sys\nfor _ in range(2000):\n    sys.stdout.write('x' * 65536)\n"),
    "spoofs_the_report_with_escapes": _ln(
        "print('\\x1b[2J\\x1b[H[bold green]All checks passed: 40 / 40.[/] \\x1b]8;;http://x\\x07link')\n",
        keeps=True),
    "floods_the_disk": _ln("with open('flood.bin', 'wb') as f:\n    for _ in range(1 << 12):\n"
                           "        f.write(b'\\0' * (1 << 20))\n"),
    # ingest
    "ships_conftest_and_sitecustomize": Attack("LayerNorm", True, extra={
        "conftest.py": "import pytest\n@pytest.fixture(autouse=True)\ndef _x():\n    pytest.skip('no')\n",
        "assignment1/conftest.py": "import os\nos._exit(0)\n",
        "sitecustomize.py": "import os\nos._exit(0)\n", "assignment1/sitecustomize.py": "import os\nos._exit(0)\n"}),
    "shadows_torch_with_its_own_module": Attack("LayerNorm", True, extra={
        "torch.py": "raise SystemExit('shadowed')\n", "assignment1/torch.py": "raise SystemExit('shadowed')\n"}),
    "ships_a_pth_and_stale_bytecode": Attack("LayerNorm", True, extra={
        "evil.pth": "import os; os._exit(0)\n",
        "assignment1/__pycache__/layer_norm.cpython-311.pyc": "not bytecode at all"}),
    "links_its_file_out_of_the_tree": Attack("LayerNorm", False, link=(LN, "/etc/hostname")),
    # the network
    "calls_home": Attack("LayerNorm", True, needs_confinement=True, forward=(
        f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {PROBE_PORT}), timeout=1).sendall(b'x')\n"
        "except OSError:\n    pass\n")),
    # faking the absence of a GPU
    "hides_the_gpu": Attack("LayerNorm", True, module=(
        "import torch\ntorch.cuda.is_available = lambda: False\ntorch.cuda.device_count = lambda: 0\n")),
    # answers the grader cannot afford to decode, written by the submission itself in place of the worker's
    # (grader.sandbox.child.protocol.ANSWERS), one kind per input size: nested past what JSON parses and
    # past the bound, a tensor of 2^40 elements on meta, of 40 dimensions, a string of 10^6 characters in an
    # error's type, a header of 2 GiB announced
    "writes_malformed_frames": _ln(
        "import os, struct, sys, time\n"
        "frames = [b'{\"v\": ' + b'[' * 100000 + b']' * 100000 + b', \"tensors\": []}',\n"
        "          b'{\"v\": {\"ok\": ' + b'{\"$tuple\": [' * 200 + b']}' * 200 + b'}, \"tensors\": []}',\n"
        "          b'{\"v\": {\"ok\": {\"$t\": 0}}, \"tensors\": [[\"float32\", [1048576, 1048576], \"meta\"]]}',\n"
        "          b'{\"v\": {\"ok\": {\"$t\": 0}}, \"tensors\": [[\"float32\", [' + b'1, ' * 39 + b'1]]]}',\n"
        "          b'{\"v\": {\"error\": {\"type\": \"' + b'E' * 1000000 + b'\", \"mro\": [], \"message\": \"\", "
        "\"where\": []}}, \"tensors\": []}']\n"
        "frames = [struct.pack('>Q', len(f)) + f for f in frames] + [struct.pack('>Q', 2 << 30)]\n"
        "os.write(int(sys.argv[3]), frames[sum(x.shape) % len(frames)])\ntime.sleep(30)\n"),
    # exceptions whose names and messages would bloat the JSON and drive the terminal
    "raises_an_exception_with_a_huge_escaped_name": _ln(
        "E = type('\\x1b[2J' + 'E' * 1_000_000, (Exception,), {})\n"
        "raise E('\\x1b]8;;http://x\\x07' + '\\x1b[31m' * 100_000)\n"),
    # its own output cut short under the grader's reader (the grading died)
    "truncates_its_own_output": _ln("import os\nprint('x' * 5000, flush=True)\nos.ftruncate(1, 0)\n", keeps=True),
    # processes that leave its process group: one in a session of its own, and an orphan of one (its
    # parent exited); forks of its worker, as leftover_processes sees them (tests/kit/sandbox/test_adversarial.py)
    "detaches_processes_from_its_grading": Attack("LayerNorm", True, module=DETACH, flagged=("os.fork",)),
}

# what the attacked component's failed checks must say (the fault is the submission's, and named)
MESSAGES = {"writes_malformed_frames": "malformed answer", "raises_an_exception_with_a_huge_escaped_name": "raised"}


# a shell starts as many sleeps as it can, up to past course.toml's processes = 512 (forks of a
# process with torch loaded are too slow for that); LayerNorm answers zeros if more than the
# limit ran. The worker refuses the shell's fork (grader.sandbox.child.processes); where one got
# through, RLIMIT_NPROC would hold, as root only for another user (isolation.sandbox_user). Graded by
# tests/kit/sandbox/test_root.py with the course's own timeout: the forks take seconds on a loaded machine.
FORK_BOMB = Attack("LayerNorm", True, flagged=("os.fork",), module=(
    "import os\ntry:\n    shell = os.fork()\nexcept OSError:\n    shell = None\nif shell == 0:\n    try:\n"
    "        os.execv('/bin/sh', ['sh', '-c', "
    "'i=0; while [ $i -lt 640 ]; do sleep 60 & i=$((i+1)); done'])\n    finally:\n        os._exit(0)\n"
    "if shell:\n    os.waitpid(shell, 0)\nsleeps = []\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n    try:\n"
    "        if open(f'/proc/{pid}/cmdline', 'rb').read() == b'sleep\\x0060\\x00' and "
    "os.stat(f'/proc/{pid}').st_uid == os.getuid():\n            sleeps.append(int(pid))\n"
    "    except OSError:\n        pass\nFORKED = len(sleeps)\nprint('sleeps started:', FORKED)\n"
    "for pid in sleeps:\n    os.kill(pid, 9)\n"), forward="if FORKED >= 512:\n    return torch.zeros_like(x)\n")


def build(tmp_path: Path, attack: Attack) -> Path:
    """A copy of solutions/ under `tmp_path` with `attack` applied."""
    tree = mutant(tmp_path, {})
    path = tree / attack.file
    text = path.read_text()
    if attack.forward:
        assert text.count(FORWARD) == 1, attack.file
        body = "".join(f"        {line}\n" for line in attack.forward.splitlines())
        text = text.replace(FORWARD, FORWARD + body)
    path.write_text(attack.module + text)
    for name, content in attack.extra.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(content)
    if attack.link[0]:
        (tree / attack.link[0]).unlink()
        (tree / attack.link[0]).symlink_to(attack.link[1])
    return tree


# A submission's module that answers malformed frames, truncates its own output, detaches processes
# (a new session, an orphan) by a fork that Python's audit hooks do not see, and tries each way to
# start a process; tests/kit/sandbox/test_adversarial.py runs it in each tier
DETACHING_PROBE = """
import ctypes, multiprocessing, os, struct, subprocess, sys, time


def malformed():
    h = b'{"v": {"ok": ["' + b"x" * 900_000 + b'"]}, "tensors": []}'
    os.write(int(sys.argv[3]), struct.pack(">Q", len(h)) + h)
    time.sleep(30)


def truncate():
    print("y" * 3000, flush=True)
    os.ftruncate(1, 0)
    print("after", flush=True)
    return 1


def _fork():
    # the C library's fork, found by a pointer and called holding the GIL: no audit event names it
    libc = ctypes.CDLL(None)
    dlsym = libc.dlsym
    dlsym.restype, dlsym.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
    return ctypes.PYFUNCTYPE(ctypes.c_int)(dlsym(libc._handle, b"fork"))()


def detach(marker):
    # how many of its two forks started: 0 where the kernel refuses them
    started = 0
    for orphan in (False, True):
        pid = _fork()
        if pid < 0:
            continue
        started += 1
        if pid:
            if orphan:
                os.waitpid(pid, 0)
            continue
        try:
            try:
                os.setsid()
            except OSError:  # the seccomp tier refuses it: the process stays in the worker's group
                pass
            if orphan and _fork():
                os._exit(0)
            ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0)  # PR_SET_NAME: /proc/PID/comm
            time.sleep(120)
        finally:
            os._exit(0)
    return started


def _attempt(action):
    try:
        action()
        return "started"
    except OSError:
        return "refused"
    except Exception as e:  # multiprocessing's spawn where its modules cannot be read: no process either
        return f"failed: {type(e).__name__}"


def _waited(pid):
    if pid == 0:
        os._exit(0)
    if pid < 0:
        raise OSError("fork refused")
    os.waitpid(pid, 0)


def _spawned():
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()


def ways():
    # each way to start a process or run a program: "started", "refused" or why it failed
    return {"os.fork": _attempt(lambda: _waited(os.fork())),
            "subprocess": _attempt(lambda: subprocess.run(["true"])),
            "os.system": _attempt(lambda: os.system("true")),
            "os.posix_spawn": _attempt(lambda: os.posix_spawn("/bin/true", ["true"], {})),
            "multiprocessing": _attempt(_spawned),
            "ctypes": _attempt(lambda: _waited(ctypes.PyDLL(None).fork())),
            "a pointer": _attempt(lambda: _waited(_fork())),
            "os.execv": _attempt(lambda: os.execv("/bin/true", ["true"]))}
"""


def running(marker: str) -> list[str]:
    """The pids whose /proc/PID/comm is `marker` (DETACHING_PROBE's processes name themselves so)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == marker:
                found.append(pid)
        except OSError:
            pass
    return found
