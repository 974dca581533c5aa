"""The adversarial suite: every hostile submission of tests/kit/attacks.py, graded through the real CLI:
together, with an honest neighbour, by `grade batch` as a class is graded (each attack then also
meets the template its successors' workers are forked from), and, where the attack aims at what
`grade` itself prints or a batch refuses it before grading, alone by `grade`.

For each attack: the attacked component earns what its honest code earns (nothing for a
cheat), every other component keeps its points, the JSON is valid, the report carries no
escape sequence of the submission's, no file outside the scratch folder changes (the kit,
a neighbouring submission, the Python installation's startup hooks), no process of the
submission outlives the grade, and nothing reaches the network.
"""

import hashlib
import json
import os
import shutil
import socket
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.sandbox import isolation
from tests.kit import needs, seccomp
from tests.kit.attacks import ATTACKS, DETACHING_PROBE, MESSAGES, PROBE_PORT, build, running
from tests.kit.conftest import (
    ROOT,
    assert_loses_only_in,
    cli_json,
    earned,
    full_marks,
    held,
    mutant,
    run_grade,
    scores,
)

# the harness reads /proc; the kit's CI is Linux
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the adversarial suite reads /proc: Linux only")

WATCHED = [ROOT / "course.toml", ROOT / "solutions", ROOT / "grader", ROOT / "tests" / "grading"]


def fingerprint(*roots: Path) -> dict[str, str]:
    """A hash of every file under `roots`, and the startup hooks of the Python installation."""
    seen = {}
    for root in roots:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    for folder in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]}:
        hooks = sorted(p.name for p in Path(folder).iterdir() if p.suffix == ".pth" or p.stem in
                       ("sitecustomize", "usercustomize"))
        seen[f"hooks in {folder}"] = ",".join(hooks)
    return seen


def leftover_processes() -> list[str]:
    """Submission processes whose scratch folder is gone: they outlived their grade."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        scratch = [a.decode(errors="replace") for a in argv if b"/grade-" in a]
        if any(b"grader.sandbox.child" in a for a in argv) and scratch and not Path(scratch[0]).exists():
            left.append(f"{pid}: {scratch[0]}")
    return left


class Probe:
    """A loopback listener that counts who reached it."""

    def __init__(self, port: int):
        self.server = socket.create_server(("127.0.0.1", port))
        self.server.settimeout(0.2)
        self.reached = 0
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while self.running:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.reached += 1
            conn.close()

    def close(self):
        self.running = False
        self.thread.join()
        self.server.close()


# the attacks a folder of the class can hold: a batch refuses a symbolic link in a submission before
# grading it (its own test, tests/kit/sandbox/test_batch.py), so the link's attack is graded by `grade` alone
IN_A_CLASS = sorted(name for name, attack in ATTACKS.items() if not attack.link[0])
BY_GRADE = sorted(set(ATTACKS) - set(IN_A_CLASS)) + [
    "spoofs_the_report_with_escapes", "prints_fake_json", "floods_its_output"]  # what reaches grade's streams
CLASS = pytest.mark.xdist_group("adversarial_class")  # one worker grades the class, once
NEIGHBOUR = "neighbour"  # an honest submission graded in the same class, after and between the attacks


@dataclass
class Graded:
    reports: dict[str, dict]
    output: str  # what the grading printed (stdout and stderr), where a submission's escape could show
    changed: list[str]  # files outside the scratch folders that changed while it ran
    leftover: list[str]  # submission processes that outlived it
    reached: int  # connections to the loopback listener


def _watched_while(run, trees: list[Path], probe: bool) -> tuple[object, list[str], list[str], int]:
    """run(), and what it changed among WATCHED and `trees`, the submission processes it left, and (with
    `probe`: the network attack is among those graded) the connections to PROBE_PORT."""
    before = fingerprint(*WATCHED, *trees)
    listener = Probe(PROBE_PORT) if probe else None
    try:
        result = run()
    finally:
        if listener:
            listener.close()
    after = fingerprint(*WATCHED, *trees)
    deadline = time.monotonic() + 5
    while leftover_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    return result, sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)), \
        leftover_processes(), listener.reached if listener else 0


@pytest.fixture(scope="module")
def class_graded(tmp_path_factory, quick_course) -> Graded:
    """Every attack a class can hold, and an honest neighbour, graded by `grade batch` as an instructor
    grades a class (the same isolation as `grade`, its workers forked from one template that each
    attack could try to poison for the submissions after it)."""
    work, root = tmp_path_factory.mktemp("attacks"), tmp_path_factory.mktemp("class")
    for name in IN_A_CLASS:
        shutil.copytree(build(work / name, ATTACKS[name]), root / name, symlinks=True)
    shutil.copytree(mutant(work / NEIGHBOUR, {}), root / NEIGHBOUR)
    out = tmp_path_factory.mktemp("out")
    proc, changed, leftover, reached = _watched_while(lambda: run_grade(
        "batch", str(root), "--assignment", "assignment1", "--out", str(out), "--course", str(quick_course)),
        [root / name for name in IN_A_CLASS + [NEIGHBOUR]], probe="calls_home" in IN_A_CLASS)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    texts = {name: (out / "reports" / f"{name}.json").read_text() for name in IN_A_CLASS + [NEIGHBOUR]}
    assert all(len(text) < 1_000_000 for text in texts.values()), {n: len(t) for n, t in texts.items()}
    reports = {name: json.loads(text) for name, text in texts.items()}
    printed = [proc.stdout, proc.stderr, *((out / "feedback" / f"{n}.txt").read_text() for n in reports)]
    return Graded(reports, "".join(printed), changed, leftover, reached)


def _holds_its_ground(name: str, report: dict, graded: Graded) -> None:
    """What every attack must leave as it found it, and what it may earn."""
    attack = ATTACKS[name]
    if attack.needs_confinement:
        tier = report["isolation"]
        assert tier != "process" and not isolation.protects_course(tier, [ROOT / "solutions"]), \
            f"{name} is stopped only where the course is out of the submission's reach; graded in {tier}"
    got, full, checks = scores(report), full_marks(report), earned(report)
    others = {n: s for n, s in got.items() if n != attack.component and s != full[n]}
    assert not others, f"{name} cost points outside {attack.component}: {others}"
    # what its checks earn (an attack flagged for dynamic reach, os.fork or frames, is held at 0 for review)
    if attack.keeps:
        assert checks[attack.component] == full[attack.component], report
    else:
        assert checks[attack.component] < full[attack.component] and got[attack.component] < full[attack.component]
    assert (attack.component in held(report)) == bool(attack.flagged), report
    if name in MESSAGES:  # the submission's fault, and said so: never the grader's
        failed = [t for c in report["components"] if c["name"] == attack.component for t in c["tests"]
                  if t["status"] != "passed"]
        assert failed and all(MESSAGES[name] in t["message"] and len(t["message"]) < 5000 for t in failed), failed
    assert "\x1b" not in graded.output  # NO_COLOR and TERM=dumb: any escape would be the submission's
    assert not graded.changed, f"files outside the scratch folders changed: {graded.changed}"
    assert not graded.leftover, graded.leftover
    assert graded.reached == 0, "a submission reached a loopback listener"


@CLASS
@pytest.mark.parametrize("name", IN_A_CLASS)
def test_an_attack_in_a_class_earns_nothing_and_harms_nothing(class_graded, name):
    _holds_its_ground(name, class_graded.reports[name], class_graded)


@CLASS
def test_the_honest_neighbour_of_every_attack_keeps_every_point(class_graded):
    report = class_graded.reports[NEIGHBOUR]
    assert report["score"] == report["max_score"], scores(report)


@pytest.mark.parametrize("name", BY_GRADE)
def test_an_attack_graded_by_grade_earns_nothing_and_harms_nothing(tmp_path, quick_course, name):
    tree = build(tmp_path / "attacker", ATTACKS[name])
    proc, changed, leftover, reached = _watched_while(lambda: run_grade(
        "assignment1", "--submission", str(tree), "--json", "-", "--course", str(quick_course)),
        [mutant(tmp_path / NEIGHBOUR, {})], probe=name == "calls_home")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(proc.stdout) < 1_000_000, f"a JSON report of {len(proc.stdout)} bytes"
    _holds_its_ground(name, json.loads(proc.stdout), Graded({}, proc.stderr, changed, leftover, reached))


CHEAT = '''
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import importlib.util, os, sys
        for name, module in list(sys.modules.items()):
            other = getattr(module, "TransformerEmbedding", None)
            if other is not None and other is not type(self) and isinstance(other, type):
                return other.forward(self, x)
        for folder, _, files in os.walk(os.getcwd()):
            path = os.path.join(folder, "embedding.py")
            if "embedding.py" in files and path != os.path.abspath(__file__):
                spec = importlib.util.spec_from_file_location("found", path)
                found = importlib.util.module_from_spec(spec)
                try:
                    spec.loader.exec_module(found)
                    return found.TransformerEmbedding.forward(self, x)
                except Exception:
                    pass
        return self.token(x)
'''


def test_the_reference_is_nowhere_in_the_submissions_process(tmp_path):
    """Isolated checks run the reference's parts in the grader: a submission that looks for the
    reference to delegate to finds nothing, and its own bug still costs its points."""
    old = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        ### BEGIN SOLUTION\n" \
          "        return self.position(self.token(x))  # (B, T, d_model)\n        ### END SOLUTION\n"
    tree = mutant(tmp_path, {"assignment1/embedding.py": [(old, CHEAT)]})
    assert_loses_only_in(cli_json(tree, "assignment1"), "TransformerEmbedding")



# --- the worker's pipe, its processes and its output, through the grader's own classes -------------

FRAMES = {  # answers a submission can write itself in place of the worker's (protocol.ANSWERS refuses them)
    "nested_past_what_json_parses": b'{"v": ' + b"[" * 100_000 + b"]" * 100_000 + b', "tensors": []}',
    "nested_past_the_bound": b'{"v": {"ok": ' + b'{"$tuple": [' * 40 + b"]}" * 40 + b'}, "tensors": []}',
    "a_dict_nested_past_the_bound": b'{"v": {"ok": ' + b'{"$d": [["k", ' * 40 + b"]]}" * 40 + b'}, "tensors": []}',
    "a_tensor_of_40_dimensions": b'{"v": {"ok": {"$t": 0}}, "tensors": [["float32", [' + b"1, " * 39 + b'1]]]}',
    "a_meta_tensor_of_2_40_elements": b'{"v": {"ok": {"$t": 0}}, "tensors": [["float32", [1048576, 1048576], '
                                      b'"meta"]]}',
    "tensors_of_128_MiB": b'{"v": {"ok": {"$t": 0}}, "tensors": [["float32", [33554432]]]}',
    "a_type_name_of_a_million_characters": b'{"v": {"error": {"type": "' + b"E" * 1_000_000 + b'", "mro": [], '
                                           b'"message": "", "where": []}}, "tensors": []}',
    "an_unhashable_dtype": b'{"v": {"ok": {"$t": 0}}, "tensors": [[["float32"], [1]]]}',
    "an_unhashable_key": b'{"v": {"ok": {"$d": [[[1], 2]]}}, "tensors": []}',
    # strings past the bound where a decoder takes plain leaves as they sit: in a list, a tuple, a key, a value
    "a_long_string_in_a_list": b'{"v": {"ok": [1, "' + b"s" * 20_000 + b'"]}, "tensors": []}',
    "a_long_string_in_a_tuple": b'{"v": {"ok": {"$tuple": [null, "' + b"s" * 20_000 + b'"]}}, "tensors": []}',
    "a_long_key": b'{"v": {"ok": {"$d": [["' + b"k" * 20_000 + b'", 1]]}}, "tensors": []}',
    "a_long_string_as_a_value": b'{"v": {"ok": {"$d": [["k", "' + b"s" * 20_000 + b'"]]}}, "tensors": []}',
    "not_utf8": b'{"v": "\xff\xfe", "tensors": []}',
    "not_an_object": b"[1, 2, 3]",
}


def _send_and_read(data: bytes):
    from grader.sandbox.child import protocol

    r, w = os.pipe()

    def send():
        try:
            protocol.write_all(w, data)
        except OSError:  # the reader stopped early: a refused header is not read to its end
            pass
        finally:
            os.close(w)

    writer = threading.Thread(target=send)
    writer.start()
    try:
        return protocol.read_frame(r, None, protocol.ANSWERS)
    finally:
        os.close(r)
        writer.join()


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_a_malformed_answer_is_a_protocol_error_never_the_graders(name):
    import struct

    from grader.sandbox.child import protocol

    with pytest.raises(protocol.ProtocolError):
        _send_and_read(struct.pack(">Q", len(FRAMES[name])) + FRAMES[name])


def test_a_frame_announcing_a_header_past_the_bound_is_refused_unread():
    import struct

    from grader.sandbox.child import protocol

    with pytest.raises(protocol.ProtocolError, match="frame header of"):
        _send_and_read(struct.pack(">Q", 2 << 30))


def test_answers_within_the_bounds_still_decode():
    import torch

    from grader.sandbox.child import protocol

    value = {"ok": [torch.arange(6.0).reshape(2, 3), ("a" * 16_000, None), {"k": torch.zeros(0)},
                    [True, 1, -2.5, None, "é", [[3]], {1: "one", None: [False]}], ("t", (1.5,))]}
    got = _send_and_read(protocol.encode(value))["ok"]
    assert torch.equal(got[0], value["ok"][0]) and got[1] == value["ok"][1] and got[2]["k"].shape == (0,)
    assert got[3:] == value["ok"][3:] and [type(x) for x in got[3][:4]] == [bool, int, float, type(None)]


@pytest.mark.needs("root")  # a sandbox has a uid of its own only under a root grader
def test_sandbox_uids_are_never_reused():
    uids = [isolation.sandbox_user() for _ in range(600)]
    assert len(set(uids)) == len(uids) and all(u is not None and 0 < u < 2**32 - 1 for u in uids)


def _probe_tree(tmp_path: Path, source: str) -> Path:
    """A submission of one module, assignment1/probe.py, that holds `source`."""
    tree = tmp_path / "probe"
    (tree / "assignment1").mkdir(parents=True)
    (tree / "assignment1" / "__init__.py").touch()
    (tree / "assignment1" / "probe.py").write_text(source)
    return tree


@pytest.mark.skipif(bool(isolation.unavailable()), reason=f"no namespaces here: {isolation.unavailable()}")
def test_no_way_starts_a_process_from_the_worker_in_the_namespaces_tier(tmp_path, monkeypatch):
    """os.fork, subprocess, os.system, posix_spawn, multiprocessing, the C library's fork through ctypes
    by name or by a pointer no audit hook sees, an exec in the worker's place: each refused (issue 51: a
    forbidden API run in a fork and piped back was never recorded), and the worker answers on."""
    from grader.limits import Limits
    from grader.sandbox.host import Sandbox

    monkeypatch.setenv(isolation.ENV_VAR, "namespaces")
    tree = _probe_tree(tmp_path, DETACHING_PROBE)
    box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=20))
    try:
        assert box.isolation == "namespaces"
        box.request({"op": "import", "module": "assignment1.probe"})
        ways = box.request({"op": "call", "target": "assignment1.probe:ways", "args": []})
        assert set(ways.values()) == {"refused"} and len(ways) == 8, ways
        assert box.request({"op": "call", "target": "assignment1.probe:truncate", "args": []}) == 1
    finally:
        box.close()


@pytest.mark.parametrize("tier", ["process", "seccomp"])
def test_the_worker_pipe_output_and_processes_in_a_tier_without_namespaces(tmp_path, monkeypatch, tier):
    """A malformed answer is a tamper fault that keeps nothing of the frame; output truncated under
    the reader is read on; no way to start a process gets through (grader.sandbox.child.processes:
    the kernel refuses even a fork that no audit hook sees), so nothing is left to outlive it."""
    from grader.limits import Limits
    from grader.sandbox.host import Sandbox, WorkerFault

    if tier == "seccomp" and "error" in isolation.confinement():
        pytest.skip(f"no seccomp tier on this machine: {isolation.confinement()['error']}")
    monkeypatch.setenv(isolation.ENV_VAR, tier)
    tree = _probe_tree(tmp_path, DETACHING_PROBE)
    box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=20))
    marker = f"det{os.getpid() % 10**6}{tier[0]}"  # a process name: 15 characters at most
    try:
        assert box.isolation == tier
        box.request({"op": "import", "module": "assignment1.probe"})
        _, seen = box.read_output(0, 1 << 20)
        assert box.request({"op": "call", "target": "assignment1.probe:truncate", "args": []}) == 1
        text, end = box.read_output(seen + 3001, 1 << 20)
        assert "after" in text and end == len(b"after\n"), (text, end)

        ways = box.request({"op": "call", "target": "assignment1.probe:ways", "args": []})
        assert len(ways) == 8 and not [w for w, got in ways.items() if got == "started"], ways
        assert box.request({"op": "call", "target": "assignment1.probe:detach", "args": [marker]}) == 0
        assert running(marker) == []

        # last: the fault kills the worker, and a restart costs a start
        with pytest.raises(WorkerFault) as caught:
            box.request({"op": "call", "target": "assignment1.probe:malformed", "args": []})
        fault = caught.value
        assert fault.kind == "tamper" and "malformed answer" in fault.detail, fault.detail
        assert fault.__context__ is None  # no ProtocolError, whose traceback held the parsed header
        frame = fault.__traceback__
        while frame is not None:
            big = [k for k, v in frame.tb_frame.f_locals.items() if isinstance(v, (str, bytes, bytearray, list, dict))
                   and len(v) > 100_000]
            assert not big, f"{frame.tb_frame.f_code.co_name} keeps {big}"
            frame = frame.tb_next
        del fault, caught, frame
    finally:
        box.close()
    deadline = time.monotonic() + 5
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(marker), "a process the submission detached outlived its sandbox"


def test_a_malformed_answer_to_the_performance_timing_is_the_submissions_fault(tmp_path, quick_course):
    """Only when the grader times it (the performance request), scaled_dot_product_attention writes a
    frame nested past what JSON parses: the timing says so, the grading goes on, every check passes."""
    from tests.kit.conftest import grade_json

    attack = ("    import os, struct, sys, traceback\n"
              "    if any(f.f_code.co_name == 'op_profile' for f, _ in traceback.walk_stack(None)):\n"
              "        h = b'{\"v\": ' + b'[' * 100000 + b']' * 100000 + b', \"tensors\": []}'\n"
              "        os.write(int(sys.argv[3]), struct.pack('>Q', len(h)) + h)\n")
    begin = "    ### BEGIN SOLUTION\n"
    tree = mutant(tmp_path, {"assignment2/attention.py": [(begin, attack + begin)]})
    report = grade_json(tree, "assignment2", course=quick_course)
    assert report["score"] == report["max_score"], scores(report)
    timed = [e for e in report["performance"]["entries"] if e["component"] == "scaled_dot_product_attention"]
    assert timed and all(e["status"] == "error" and "malformed answer" in e["message"] for e in timed), timed


THREADED = {  # LayerNorm's forward on torch's layer_norm, reached without naming it, in a thread of its own
    "thread_pool": ("        import concurrent.futures\n"
                    "        fn = getattr(torch.nn.functional, 'layer' + '_norm')\n"
                    "        with concurrent.futures.ThreadPoolExecutor(1) as pool:\n"
                    "            return pool.submit(fn, x, (x.size(-1),), self.gamma, self.beta, self.eps).result()\n"),
    "bare_thread": ("        import _thread, queue\n"
                    "        fn, out = getattr(torch.nn.functional, 'layer' + '_norm'), queue.Queue()\n"
                    "        _thread.start_new_thread(lambda: out.put(fn(x, (x.size(-1),), self.gamma, self.beta,\n"
                    "                                                    self.eps)), ())\n"
                    "        return out.get()\n"),
}


@pytest.mark.parametrize("name", sorted(THREADED))
def test_a_forbidden_api_run_in_another_thread_is_recorded(tmp_path, name):
    from tests.kit.conftest import grade_json
    from tests.kit.sandbox.test_forbidden import LN_BODY, assert_zeroed_only

    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [(LN_BODY, THREADED[name])]})
    assert_zeroed_only(grade_json(tree, "assignment1"), "LayerNorm", "torch.nn.functional.layer_norm", "executed")


ASKS = '''
import gc, time


def slow():
    time.sleep(1.8)
    return 1


def asks(n):
    worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")
    got = [worker.ask({"n": i}) for i in range(n)]
    time.sleep(0.5)  # its answer is not there yet when the grader next looks
    return got
'''


def test_what_the_submission_takes_when_the_grader_calls_it_back_counts_against_its_deadline(tmp_path):
    """While the grader answers an ask it may call the submission's code back (a sublayer): that
    time is the submission's. Two call-backs of 1.8 s each, each inside its own 3 s deadline, take
    the asking request past its 3 s (they used to extend it: one request ran 40 s against 15 s).
    The grader's own time answering is charged to the request too, never added to its deadline
    (issue 43: asks answered in 1.8 s each, twice, used to pass a 3 s deadline); it is counted
    against the time budgets (student_seconds) and shown apart (grader_seconds)."""
    from grader.limits import Limits
    from grader.sandbox.host import Sandbox, WorkerFault

    tree = _probe_tree(tmp_path, ASKS)
    box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=3))
    try:
        box.request({"op": "import", "module": "assignment1.probe"})
        box.on_ask = lambda message: time.sleep(1.8) or message["n"]  # the grader's own work
        with pytest.raises(WorkerFault) as caught:
            box.request({"op": "call", "target": "assignment1.probe:asks", "args": [2]})
        assert caught.value.kind == "timeout" and "no answer within 3 s" in caught.value.detail, caught.value.detail
        assert box.grader_seconds >= 1.8 and box.student_seconds >= box.grader_seconds, vars(box)
        box.on_ask = lambda message: time.sleep(0.5) or message["n"]  # within the deadline: answered
        box.request({"op": "import", "module": "assignment1.probe"})
        assert box.request({"op": "call", "target": "assignment1.probe:asks", "args": [2]}) == [0, 1]
        box.on_ask = lambda message: box.request({"op": "call", "target": "assignment1.probe:slow", "args": []})
        with pytest.raises(WorkerFault) as caught:
            box.request({"op": "call", "target": "assignment1.probe:asks", "args": [2]})
        assert caught.value.kind == "timeout" and "no answer within 3 s" in caught.value.detail, caught.value.detail
    finally:
        box.close()


# --- attribution: a composite cannot tell its own parts from the reference's stand-ins ----------

TELLS = {  # how a composite might tell the reference's stand-in from its own part (TokenEmbedding)
    "class_module": "type(self.token).__module__ != __name__",
    "isinstance_of_its_own_class": "not isinstance(self.token, _MINE[0])",
    "an_attribute_of_its_own": "not getattr(self.token, 'mine', False)",
    "inspect_getsourcefile": "inspect.getsourcefile(type(self.token)) != __file__",
    "class_docstring": "type(self.token).__doc__ != _MINE[0].__doc__",
}
EMB_FORWARD = "        return self.position(self.token(x))  # (B, T, d_model)\n"
TOKEN_BUG = ("        return self.embedding(x) * math.sqrt(self.d_model)  # (B, T, d_model)\n",
             "        return self.embedding(x)  # (B, T, d_model)\n")  # a bug of the part: charged there
TOKEN_MARKER = ("        self.d_model = d_model\n", "        self.d_model = d_model\n        self.mine = True\n")
KEEP_OWN = ("class TransformerEmbedding(nn.Module):",
            "import inspect\n_MINE = [TokenEmbedding]\n\n\nclass TransformerEmbedding(nn.Module):")


def _two_faced(tmp_path: Path, tell: str) -> Path:
    """A TransformerEmbedding that skips its positional encoding unless `tell` says its token part is
    the reference's (where a failing part's checks are run again to excuse the composite)."""
    body = f"        if {tell}:\n            return self.position(self.token(x))\n        return self.token(x)\n"
    return mutant(tmp_path, {"assignment1/embedding.py": [(EMB_FORWARD, body), TOKEN_BUG, TOKEN_MARKER, KEEP_OWN]})


class TestACompositeCannotTellTheReferencesParts:
    """Attribution excuses a composite's failure where it passes on the reference's parts. A composite
    that behaved only with those (it used to: 6/6 against 2 for TransformerEmbedding) earns what it earns
    when it always misbehaves: its own parts are behind the same kind of stand-in, dressed the same."""

    def test_a_composite_that_behaves_only_with_the_reference_earns_nothing_for_it(self, tmp_path):
        """Through the real grader: one composite that behaves when any of the tells fires (each is
        held apart in the next test), and the same composite always misbehaving."""
        from tests.kit.conftest import earned, grade_json

        any_tell = " or ".join(f"({t})" for t in TELLS.values())
        two_faced = grade_json(_two_faced(tmp_path / "two_faced", any_tell), "assignment1")
        always = grade_json(_two_faced(tmp_path / "always", "False"), "assignment1")
        # what the checks earn, held or not: the tells' `import inspect` is flagged in both, which holds
        # embedding.py's components at 0 for review; attribution must not excuse the two-faced one either
        got, misbehaving = earned(two_faced), earned(always)
        assert got == misbehaving and got["TransformerEmbedding"] < 6, (got, misbehaving)
        assert scores(two_faced) == scores(always), (scores(two_faced), scores(always))

    def test_a_part_that_names_its_own_class_in_super_keeps_every_point(self, tmp_path):
        """`super(TokenEmbedding, self).__init__()` (the Annotated Transformer's style) names, through
        its module, the wrapper its class is behind: it still builds the part (it recursed, 0.67/6)."""
        from tests.kit.conftest import grade_json

        init = "    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None):\n"
        report = grade_json(mutant(tmp_path, {"assignment1/embedding.py": [
            (init + "        super().__init__()\n", init + "        super(TokenEmbedding, self).__init__()\n")]}),
            "assignment1")
        assert scores(report) == full_marks(report), scores(report)

    def test_the_stand_ins_and_the_wrapped_own_parts_look_the_same(self, tmp_path):
        """In one process, as the worker builds them: the reference's stand-in and the submission's own
        part, a class and a function, agree on every tell (and the own part runs its own code)."""
        import importlib
        import inspect

        import torch

        from grader.sandbox.child.standins import standin
        from grader.sandbox.child.tree import import_tree
        from grader.suite.parts.serve import ReferenceParts

        tree = mutant(tmp_path, {"assignment1/embedding.py": [TOKEN_BUG, TOKEN_MARKER]})
        import_tree(tree, "_h35_student")
        mine = importlib.import_module("_h35_student.assignment1.embedding").TokenEmbedding
        pad = importlib.import_module("_h35_student.assignment2.masks").make_pad_mask
        parts = ReferenceParts(None)
        parts.allow(ROOT / "solutions", {"assignment1.embedding:TokenEmbedding", "assignment2.masks:make_pad_mask"})
        link = standin.Link(parts.answer, known=lambda part: None)
        reference = link.stand_in("assignment1.embedding:TokenEmbedding",
                                  parts.describe_class("assignment1.embedding:TokenEmbedding"), mine)
        own = link.wrap(mine)
        a, b = reference(7, 4, 0), own(7, 4, 0)
        for tell in (lambda m: type(m).__name__, lambda m: type(m).__qualname__, lambda m: type(m).__module__,
                     lambda m: type(m).__doc__, lambda m: inspect.getsourcefile(type(m)),
                     lambda m: isinstance(m, mine), lambda m: [c.__name__ for c in type(m).__mro__],
                     lambda m: sorted(vars(m)), lambda m: type(m).forward, lambda m: m.mine):
            assert tell(a) == tell(b)
        x = torch.tensor([[3, 1]])
        assert torch.allclose(b(x), b.embedding(x))  # its own bug
        assert torch.allclose(a(x), a.embedding(x) * 2)  # the reference's arithmetic
        ref_fn = link.stand_in("assignment2.masks:make_pad_mask", None, pad)
        own_fn = link.wrap(pad)
        for tell in (lambda f: f.__name__, lambda f: f.__qualname__, lambda f: f.__module__, lambda f: f.__doc__,
                     lambda f: inspect.getsourcefile(f), lambda f: f.__code__, lambda f: str(inspect.signature(f))):
            assert tell(ref_fn) == tell(own_fn)
        assert torch.equal(ref_fn(x, 1), own_fn(x, 1))


# --- every process a submission starts ends with its grading, without root or namespaces too ------

AS_A_USER = '''
import json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
os.environ["GRADER_ISOLATION"] = "process"
from grader.limits import Limits
from grader.sandbox.host import Sandbox
from tests.kit.attacks import DETACHING_PROBE, running
tree = Path(tempfile.mkdtemp()) / "probe"
(tree / "assignment1").mkdir(parents=True)
(tree / "assignment1" / "__init__.py").touch()
(tree / "assignment1" / "probe.py").write_text(DETACHING_PROBE)
box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=20))
try:
    box.request({"op": "import", "module": "assignment1.probe"})
    ways = box.request({"op": "call", "target": "assignment1.probe:ways", "args": []})
    box.request({"op": "call", "target": "assignment1.probe:detach", "args": [sys.argv[2]]})
    deadline = time.monotonic() + 10
    while len(running(sys.argv[2])) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    started = len(running(sys.argv[2]))
finally:
    box.close()
deadline = time.monotonic() + 5
while running(sys.argv[2]) and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({"uid": os.geteuid(), "tier": box.isolation, "user": box.user, "started": started,
                  "left": running(sys.argv[2]), "ways": ways}))
'''


@pytest.mark.skipif(sys.platform != "linux", reason="child subreapers are Linux's")
class TestEveryProcessEndsWithItsGradingWithoutRoot:
    """In the process tier a grader without root has no uid of its own to kill the sandbox by: it
    adopts orphans (PR_SET_CHILD_SUBREAPER), so that a double fork whose middle process exits leaves
    its grandchild with the grader, which kills it with the sandbox (it outlived it before). A fork
    gets that far only where the kernel takes no seccomp filter (the worker's refusal is then its audit
    hook alone, grader.sandbox.child.processes), as here: a filter refuses seccomp filters below it."""

    @pytest.mark.skipif(not seccomp.SUPPORTED, reason="the refusal of seccomp filters is an x86-64 Linux filter")
    def test_a_setsid_double_fork_outlives_nothing_as_nobody(self):
        import subprocess

        marker = f"orph{os.getpid() % 10**6}"
        argv = [sys.executable, "-c", AS_A_USER, str(ROOT), marker]
        if os.geteuid() == 0:
            argv = [*needs.as_nobody(), *argv]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                  preexec_fn=lambda: seccomp.refuse_namespaces(seccomp=False))
            assert proc.returncode == 0, proc.stderr[-3000:]
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            assert got["uid"] != 0 and got["tier"] == "process" and got["user"] is None, got
            # Python's ways are refused by the audit hook; a fork it does not see gets through
            started = sorted(way for way, how in got["ways"].items() if how == "started")
            assert started == ["a pointer", "multiprocessing"], got["ways"]
            assert got["started"] == 2 and got["left"] == [], got  # a new session, and a double fork's orphan
        finally:
            for pid in running(marker):  # what a failure left
                os.kill(int(pid), 9)

    def test_only_the_sandboxes_orphans_are_taken(self):
        """reap.orphans lists the children this process adopted: not those it started in its own
        session, nor the kit's own processes in sessions of theirs (reap.KIT_PROCESSES), nor any started before."""
        import subprocess

        from grader.sandbox import reap

        assert reap.adopt_orphans()
        since = reap.start_time(os.getpid())
        own = subprocess.Popen(["sleep", "30"])  # the grader's own, in its session
        kit = subprocess.Popen(["sleep", "30"], start_new_session=True)  # a template, say
        stray = subprocess.Popen(["sleep", "30"], start_new_session=True)  # as an adopted orphan looks
        # this process's registry: in the full suite it holds the templates and helpers that earlier
        # tests' warm graders started here, which are no orphans either (a registry of the test's own
        # listed them: CI, 9790 and 15942)
        registry = reap.KIT_PROCESSES
        registry.add(kit.pid)
        try:
            assert reap.orphans(since, registry) == [stray.pid]
            assert reap.orphans(reap.start_time(stray.pid) + 1, registry) == []  # started before that sandbox's worker
            reap.kill_orphans(since, registry)
            assert reap.start_time(stray.pid) is None  # killed and reaped: no zombie left
            assert own.poll() is None and kit.poll() is None
        finally:
            registry.discard(kit.pid)
            for p in (own, kit, stray):
                p.kill()
                p.wait()


# --- the instructor's grade does not pay a memorised public example -----------------------------

LN_BODY_SOLUTION = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
                    "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n"
                    "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta"
                    "  # (..., d_model)\n")


def _answering(tmp_path: Path, answers: str) -> Path:
    """A LayerNorm that answers from `answers` (source of a dict: rounded input sum -> output), else zeros."""
    body = (f"        table = {answers}\n"
            "        key = round(float(x.sum()), 3)\n"
            "        if key in table:\n"
            "            return torch.tensor(table[key], dtype=x.dtype)\n"
            "        return torch.zeros_like(x)\n")
    return mutant(tmp_path, {"assignment1/layer_norm.py": [(LN_BODY_SOLUTION, body)]})


class TestAMemorisedPublicExampleEarnsNothing:
    """The public tier's stored examples (inputs and the reference's outputs) ship in the release. In
    the instructor's grade a check on one also runs a fresh draw of it (from course.toml's hidden_seed,
    which the release leaves out), compared with the reference live: a lookup table of the stored
    answers earns what zeros earn (it earned the stored checks' points before: 2.5 against 1.67)."""

    def test_a_lookup_table_of_the_stored_answers_earns_no_more_than_zeros(self, tmp_path):
        import torch

        from tests.grading.support import EXPECTED
        from tests.kit.conftest import grade_json

        stored = torch.load(EXPECTED / "assignment1.pt", weights_only=True)
        table = {round(float(c["inputs"][0].sum()), 3): c["output"].tolist() for c in stored.values()
                 if c["target"].endswith(":LayerNorm")}
        assert len(table) == 2  # the two stored LayerNorm cases, told apart by their inputs
        lookup = scores(grade_json(_answering(tmp_path / "lookup", repr(table)), "assignment1"))
        zeros = scores(grade_json(_answering(tmp_path / "zeros", "{}"), "assignment1"))
        # no gain; LayerNorm's may be less: its table's answers are made on the CPU, which the placement check
        # finds where it runs the stored cases on a device that holds their values (grader.sandbox.child.placement.held)
        assert all(lookup[name] <= zeros[name] for name in zeros) and lookup.keys() == zeros.keys(), (lookup, zeros)
        assert {n: v for n, v in lookup.items() if n != "LayerNorm"} == {
            n: v for n, v in zeros.items() if n != "LayerNorm"}, (lookup, zeros)

    def test_the_fresh_example_is_drawn_only_where_the_reference_is_and_always_the_same(self):
        import torch

        from grader.sandbox.child.tree import resolve
        from grader.suite.reference import load
        from tests.grading.support import examples, stored
        from tests.kit.conftest import SOLUTIONS

        class Student:  # what a check sees of the submission: only these two attributes are read
            reference, fresh_seed = None, None

        student = Student()
        assert examples(student, "assignment1", "layer_norm") == [stored("assignment1", "layer_norm")]
        student.reference, student.fresh_seed = SOLUTIONS, 12345  # the instructor's grade
        first, fresh = examples(student, "assignment1", "layer_norm")
        again = examples(student, "assignment1", "layer_norm")[1]
        assert first is stored("assignment1", "layer_norm") and fresh.get("fresh")
        assert not torch.equal(fresh["inputs"][0], first["inputs"][0])
        assert torch.equal(fresh["inputs"][0], again["inputs"][0])  # derandomized: same grade every time
        ref = resolve(load(SOLUTIONS), fresh["target"])(*fresh["args"], **fresh["kwargs"])
        ref.load_state_dict(fresh["state"])
        assert torch.allclose(ref.eval()(*fresh["inputs"]), fresh["output"])  # the reference's output, live
        student.fresh_seed = 54321
        assert not torch.equal(examples(student, "assignment1", "layer_norm")[1]["inputs"][0], fresh["inputs"][0])


# --- placement: testing for the meta device does not pass the placement checks -----------------

META_TELLS = {  # where a submission makes its tensors: the inputs' device only where it sees meta
    "is_meta": "x.device if x.is_meta else 'cpu'",
    "device_type": "x.device if x.device.type == 'meta' else 'cpu'",
    "device_string": "'meta' if str(x.device) == 'meta' else 'cpu'",
}
RIGHTLY = {  # made where the inputs are, as a GPU needs: nothing is found
    "device_kwarg": lambda x: x * torch_ones(x.shape[-1], device=x.device),
    "zeros_like": lambda x: x + __import__("torch").zeros_like(x),
    "new_ones": lambda x: x * x.new_ones(x.shape[-1]),
    "a_python_scalar": lambda x: x * 2.0,
}


def torch_ones(*args, **kwargs):
    import torch

    return torch.ones(*args, **kwargs)


class TestPlacementIsNotFooledByTestingForMeta:
    """On a machine without a GPU the placement checks run the module on `meta`; code that made its
    tensors on the CPU except where it saw `meta` passed them. The worker runs it again on fake
    tensors that say they are on `lazy:0` (watch.on_a_second_device): such code meets them there."""

    @pytest.mark.parametrize("tell", sorted(META_TELLS))
    def test_a_tensor_made_on_the_cpu_except_on_meta_is_found(self, tell):
        import torch

        from grader.sandbox.child.placement import watch

        def forward(x):
            return x * torch.ones(x.shape[-1], device=eval(META_TELLS[tell]))

        x = torch.randn(2, 3, device="meta")
        with watch.Placement("meta"):
            assert forward(x).is_meta  # the meta run alone finds nothing
        found = watch.on_a_second_device(lambda a, k: forward(*a, **k), None, [x], {})
        assert found is not None and found["function"] == "mul", found

    @pytest.mark.parametrize("way", sorted(RIGHTLY))
    def test_tensors_made_where_the_inputs_are_pass(self, way):
        import torch

        from grader.sandbox.child.placement import watch

        assert watch.on_a_second_device(lambda a, k: RIGHTLY[way](*a), None,
                                            [torch.randn(2, 3, device="meta")], {}) is None

    def test_a_module_comes_back_as_it_was_and_what_reads_a_value_judges_nothing(self):
        import torch

        from grader.sandbox.child.placement import watch

        module = torch.nn.Linear(3, 4).to("meta")
        module.register_buffer("table", torch.ones(4, device="meta"))
        before = [module.weight, module.bias, module.table]
        x = torch.randn(2, 3, device="meta")
        assert watch.on_a_second_device(lambda a, k: module(*a) + module.table, module, [x], {}) is None
        assert watch.on_a_second_device(lambda a, k: module(*a) * float(a[0].sum()), module, [x], {}) is None
        module.plain = torch.ones(4)  # a plain attribute: .to(device) leaves it on the CPU
        found = watch.on_a_second_device(lambda a, k: module(*a) * module.plain, module, [x], {})
        assert found is not None and found["attribute"] == "plain", found
        assert [module.weight, module.bias, module.table] == before and all(t.is_meta for t in before)

    def test_a_layer_norm_that_tests_for_meta_loses_its_placement_check(self, tmp_path):
        from tests.kit.conftest import grade_json

        body = ("        scale = torch.ones(x.shape[-1], device=x.device if x.device.type == 'meta' else 'cpu')\n"
                "        return scale * self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta\n")
        old = "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta  # (..., d_model)\n"
        report = grade_json(mutant(tmp_path, {"assignment1/layer_norm.py": [(old, body)]}), "assignment1")
        assert_loses_only_in(report, "LayerNorm")
        failed = [t for c in report["components"] for t in c["tests"] if t["status"] != "passed"]
        assert [t["id"] for t in failed] == ["layer_norm_stays_on_the_inputs_device"], failed
        assert "lazy:0" in failed[0]["message"] and "layer_norm.py" in failed[0]["message"], failed[0]
