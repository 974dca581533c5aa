"""The worker template (grader.sandbox.template): a worker forked from a process that has imported torch
is the worker a fresh process would be, as isolated; faults restart it from the template; nothing a
submission does reaches the template or the next submission; and a grade through the template is the
grade without one.
"""

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from grader.limits import Limits
from grader.sandbox import isolation, template
from grader.sandbox.host import Sandbox, WorkerFault
from tests.kit.conftest import ROOT, cmdline, mutant
from tests.kit.mutants import patches
from tests.kit.sandbox.test_reproducible import BUGS, without_timings

pytestmark = pytest.mark.skipif(bool(template.unavailable()), reason=template.unavailable() or "")

NAMESPACES = pytest.mark.skipif(bool(isolation.unavailable()), reason=f"no namespaces here: {isolation.unavailable()}")
SECCOMP = pytest.mark.skipif("error" in isolation.confinement(),
                             reason=f"no seccomp tier here: {isolation.confinement().get('error')}")
MODES = ["process", pytest.param("seccomp", marks=SECCOMP), pytest.param("namespaces", marks=NAMESPACES)]

PROBE = '''
import os, re, resource, signal, sys, time
import torch


def facts():
    """What a worker is: who, where, with what limits and descriptors, and whether torch computes."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
    a = torch.randn(256, 256, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    w = a.clone().requires_grad_(True)
    with torch.enable_grad():
        (w @ a).tanh().sum().backward()
    big = torch.randn(1 << 22, generator=torch.Generator().manual_seed(2))
    torch.set_num_threads(2)  # intra-op threads in a fork of the template
    two = big.exp().sum().item()
    threads = len(os.listdir("/proc/self/task"))
    torch.set_num_threads(1)
    # the last: the listing's own; folders: a root grader's process sandbox's import path (jail.become)
    fds = [fd for fd in sorted(int(fd) for fd in os.listdir("/proc/self/fd"))[:-1]
           if not os.path.isdir(f"/proc/self/fd/{fd}")]
    return {
        "in_a_pid_namespace": os.getpid() == 2, "uid": os.getuid(),
        # a root grader's process sandbox: its user's own folder in the staged one (host.Sandbox)
        "here": os.getcwd() == os.environ["HOME"] in (sys.argv[1], os.path.join(sys.argv[1], "home")),
        "env": sorted(os.environ), "capabilities": status["CapEff"].strip() + status["CapPrm"].strip(),
        "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE,
                                                   resource.RLIMIT_NPROC, resource.RLIMIT_CORE)],
        "fds": len(fds), "group_leader": os.getpgid(0) == os.getpid(), "argv": len(sys.argv),
        "path0": sys.path[0] == sys.argv[1],
        "kit": os.path.relpath(sys.modules["grader.sandbox.child.worker"].__file__, sys.argv[1]),
        "matmul": float((a @ a).sum()), "grad": float(w.grad.sum()), "two_threads": two, "threads_seen": threads,
        "one_thread": big.exp().sum().item(), "default_threads": torch.get_num_threads(),
        "modules": sorted(sys.modules),
    }


def places():
    """Every path a module computed (a global that is a string with a slash, or a list of them), the
    environment and the temporary folder (/tmp; the seccomp tier's TMPDIR, its own folder): what an
    import learns of where and as whom it runs. The sandbox's folder reads <here>, its pipes <pipes>."""
    import tempfile

    found = {"environment": sorted(os.environ.items()), "/tmp": sorted(os.listdir(tempfile.gettempdir()))}
    for name, module in list(sys.modules.items()):
        for key, value in list(getattr(module, "__dict__", {}).items()):
            values = value if isinstance(value, (list, tuple)) else [value]
            if key not in ("__file__", "__path__", "__cached__") and any(isinstance(v, str) and "/" in v
                                                                            for v in values):
                found[f"{name}:{key}"] = repr(value)[:500]
    for key in ("sys:argv", "sys:orig_argv"):  # descriptor numbers: the grader's, or the template's
        found[key] = found[key].replace(f"'{sys.argv[2]}', '{sys.argv[3]}'", "<pipes>")
    # a root grader's process sandbox reaches the import path through descriptors (jail.become)
    return {k: re.sub(r"/proc/self/fd/\\d+", "<fd>", str(v).replace(sys.argv[1], "<here>")) for k, v in found.items()}


def exits():
    os._exit(3)


def kills_itself():
    os.kill(os.getpid(), signal.SIGKILL)


def hangs():
    while True: pass  # one line: the stack taken at the deadline names it wherever the loop is


def attacks(paths):
    """Everything it can think of against the template: its parent, every process it sees (in a PID
    namespace only: elsewhere that is every process of the machine), the template's files (named by
    the template's own module here), the kit it runs. What got through, by name."""
    got = []
    zygote = sys.modules.get("_grader_zygote")
    for path in [*paths, *(m.__file__ for m in (zygote, sys.modules.get("_grader_jail")) if m)]:
        try:
            with open(path, "a") as f:
                f.write("# planted")
            got.append(path)
        except OSError:
            pass
    seen = [int(p) for p in os.listdir("/proc") if p.isdigit()] if os.getpid() == 2 else []
    for pid in {os.getppid(), *seen} - {os.getpid()}:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.2)
    return got
'''


def probe_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "probe"
    (tree / "assignment1").mkdir(parents=True)
    (tree / "assignment1" / "__init__.py").touch()
    (tree / "assignment1" / "probe.py").write_text(PROBE)
    return tree


@pytest.fixture(scope="module")
def shared_template():
    with template.Template(Limits()) as t:
        yield t


def sandbox(tmp_path: Path, mode: str, use: "template.Template | None", monkeypatch) -> Sandbox:
    monkeypatch.setenv(isolation.ENV_VAR, mode)
    box = Sandbox(probe_tree(tmp_path), {"assignment1": ["probe.py"]}, Limits(timeout_seconds=5), template=use)
    assert box.isolation == mode
    box.request({"op": "import", "module": "assignment1.probe"})
    return box


def call(box: Sandbox, name: str, *args):
    return box.request({"op": "call", "target": f"assignment1.probe:{name}", "args": list(args)})


@pytest.mark.parametrize("mode", MODES)
def test_a_forked_worker_is_the_worker_a_fresh_process_is(tmp_path, shared_template, monkeypatch, mode):
    facts = {}
    for name, use in (("fresh", None), ("forked", shared_template)):
        box = sandbox(tmp_path / name, mode, use, monkeypatch)
        try:
            facts[name] = call(box, "facts")
        finally:
            box.close()
    fresh, forked = facts["fresh"], facts["forked"]
    assert forked.pop("threads_seen") >= 2 and fresh.pop("threads_seen") >= 2  # OpenMP's pool started in the fork
    uids = {fresh.pop("uid"), forked.pop("uid")}  # as root, one per sandbox (isolation.sandbox_user)
    assert forked == fresh
    assert forked["here"] and forked["path0"] and forked["argv"] == 7
    assert 0 not in uids
    assert forked["fds"] == 5 and forked["default_threads"] == 1
    if mode == "namespaces":
        assert forked["in_a_pid_namespace"]
        assert forked["capabilities"] == "0" * 32
    assert forked["kit"] == "grader/sandbox/child/worker.py"  # the submission's staged copy, not the template's
    # the template forks from one thread and is not limited: the limits are its workers'
    pid = shared_template.pid
    status = Path(f"/proc/{pid}/status").read_text()
    assert "Threads:\t1\n" in status
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert [line for line in limits.splitlines() if line.startswith("Max address space")][0].split()[3] == "unlimited"


@pytest.mark.parametrize("mode", MODES)
def test_what_the_preloaded_modules_learnt_at_import_is_what_a_fresh_worker_learns(
        tmp_path, shared_template, monkeypatch, mode):
    """The template imports torch as the grading user, in its own folder; a fresh worker, as the namespace's
    user in its own root: what the import computed from that is computed again in the fork."""
    seen = {}
    for name, use in (("fresh", None), ("again", None), ("forked", shared_template)):
        box = sandbox(tmp_path / name, mode, use, monkeypatch)
        try:
            seen[name] = call(box, "places")
        finally:
            box.close()
    fresh, again, forked = seen["fresh"], seen["again"], seen["forked"]
    varies = {k for k in fresh.keys() | again.keys() if fresh.get(k) != again.get(k)}  # argv's descriptors, say
    differ = {k: (fresh.get(k), forked.get(k)) for k in fresh.keys() | forked.keys()
              if fresh.get(k) != forked.get(k) and k not in varies}
    assert not differ
    assert "torchinductor" in forked["/tmp"]  # made at torch._dynamo's import


@pytest.mark.parametrize("mode", MODES)
def test_faults_say_the_same_and_restart_from_the_template(tmp_path, shared_template, monkeypatch, mode):
    faults = {}
    for name, use in (("fresh", None), ("forked", shared_template)):
        box = sandbox(tmp_path / name, mode, use, monkeypatch)
        try:
            for fault in ("exits", "kills_itself", "hangs"):
                with pytest.raises(WorkerFault):
                    call(box, fault)
                box.request({"op": "import", "module": "assignment1.probe"})  # a fresh worker
                assert call(box, "facts")["matmul"]
            faults[name] = [(f.kind, f.detail) for f in box.faults]
            assert box.restarts == 3
        finally:
            box.close()
    assert faults["forked"] == faults["fresh"]
    assert [kind for kind, _ in faults["forked"]] == ["crash", "crash", "timeout"]
    assert "exited with status 3" in faults["forked"][0][1]
    assert "died with SIGKILL (killed, possibly out of memory)" in faults["forked"][1][1]



@pytest.mark.parametrize("mode", MODES)
def test_a_sandbox_given_no_template_restarts_from_one_of_its_own_that_ends_with_it(tmp_path, monkeypatch, mode):
    """A cold `grade` starts its first worker as a fresh Python; a fault seldom comes alone, so the
    restarts fork from a template the sandbox starts at the first, and closes with itself."""
    box = sandbox(tmp_path, mode, None, monkeypatch)
    try:
        assert isinstance(box.proc, subprocess.Popen) and box.own_template is None
        for _ in range(2):
            with pytest.raises(WorkerFault):
                call(box, "exits")
            box.request({"op": "import", "module": "assignment1.probe"})
            assert isinstance(box.proc, template.Forked)
            assert call(box, "facts")["matmul"]
        assert box.own_template is not None and box.own_template.launches == 1
        pid = box.own_template.pid
        assert b"_grader_zygote" in cmdline(str(pid))
    finally:
        box.close()
    assert not cmdline(str(pid))  # the template is gone with its sandbox


@pytest.mark.parametrize("mode", MODES)
def test_a_restarted_worker_charges_its_first_request_for_that_request_only(tmp_path, shared_template,
                                                                            monkeypatch, mode):
    # What a worker imports at start (torch, and torch._dynamo for the meta kernels: a second
    # or more, several under load) counts against startup_seconds. Charged to the first request
    # instead, the import that follows a timeout timed out in turn on a loaded machine, and the
    # component whose file it was lost every check to a hang elsewhere.
    for name, use in (("fresh", None), ("forked", shared_template)):
        box = sandbox(tmp_path / name, mode, use, monkeypatch)
        try:
            with pytest.raises(WorkerFault):
                call(box, "hangs")
            box.request({"op": "import", "module": "assignment1.probe"}, timeout=1)
            assert "torch._dynamo" in call(box, "facts")["modules"]
        finally:
            box.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@NAMESPACES
def test_a_namespaced_worker_cannot_reach_the_template(tmp_path, monkeypatch):
    with template.Template(Limits()) as t:
        server = t._server
        assert server is not None
        files = [server.dir / "zygote.py", server.dir / "jail.py"]
        before = [digest(p) for p in files]
        box = sandbox(tmp_path / "attacker", "namespaces", t, monkeypatch)
        try:
            got = call(box, "attacks", [str(p) for p in files] + ["/scratch/grader/sandbox/child/worker.py"])
        finally:
            box.close()
        assert got == []
        assert [digest(p) for p in files] == before
        assert t.pid == server.pid and server.alive() and t.launches == 1
        box = sandbox(tmp_path / "next", "namespaces", t, monkeypatch)
        try:
            assert call(box, "facts")["in_a_pid_namespace"]
        finally:
            box.close()


def test_a_template_killed_by_a_process_worker_is_started_again(tmp_path, monkeypatch):
    """Without namespaces the worker is a process of the grading user, as the grader is, and can kill
    its parent, the template: the next worker comes from a new one. (As root it is not: test_root.)"""
    if os.geteuid() == 0:
        pytest.skip("a root grader's worker is another user, who cannot kill the template (test_root)")
    with template.Template(Limits()) as t:
        first = t.pid
        box = sandbox(tmp_path / "attacker", "process", t, monkeypatch)
        try:
            with pytest.raises(WorkerFault):
                call(box, "attacks", [])
        finally:
            box.close()
        box = sandbox(tmp_path / "next", "process", t, monkeypatch)
        try:
            assert call(box, "facts")["matmul"]
        finally:
            box.close()
        assert t.launches == 2 and t.pid != first


GRADE = """
import hashlib, json, sys
from grader import load_course
from grader.grading.pipeline import grade_submission
from grader.grading.run import Services
from grader.results import to_json
from grader.sandbox.template import Template

course = load_course(sys.argv[1])
with Template(course.limits) as template:
    for arg in sys.argv[2:]:
        via, tree = arg.split("=", 1)
        report = grade_submission(course=course, assignment=course.assignment("assignment1"), submission=tree,
                                  services=Services(template=template if via == "template" else None))
        folder = template._server.dir
        files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.py"))}
        print(json.dumps({"via": via, "tree": tree, "template": template.pid, "launches": template.launches,
                          "dir": str(folder), "files": files, "report": to_json(report)}))
"""


def grade(course: Path, *runs: tuple[str, Path], **env: str) -> list[dict]:
    """Grade in one process, one template for all: ("template" or "fresh", tree) each."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([sys.executable, "-c", GRADE, str(course), *(f"{via}={tree}" for via, tree in runs)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_a_grade_through_the_template_is_the_grade_without_it(tmp_path):
    tree = mutant(tmp_path / "graded", patches(*BUGS))
    fresh, forked = grade(ROOT / "course.toml", ("fresh", tree), ("template", tree))
    assert forked["report"]["score"] < forked["report"]["max_score"]  # the case is not trivial
    assert without_timings(forked["report"]) == without_timings(fresh["report"])


# only in a PID namespace of its own (PID 2): anywhere else, every process it sees is every process of the machine
HOSTILE = '''
import os, signal, sys, time

if os.getpid() == 2:
    for path in [m.__file__ for m in (sys.modules.get("_grader_zygote"), sys.modules.get("_grader_jail")) if m] + [
            "/scratch/grader/sandbox/child/worker.py", {outside!r}]:
        try:
            with open(path, "a") as f:
                f.write("# planted")
        except OSError:
            pass
    for pid in {{os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit())}} - {{os.getpid()}}:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    # a fork bomb, bounded: the kit's tests may run as root, where RLIMIT_NPROC does not hold
    for i in range(100):
        if os.fork() == 0:
            os.setsid()
            if i < 3:  # named, to be looked for once graded
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {tag!r}])
            time.sleep(60)
            os._exit(0)
'''


@NAMESPACES
def test_a_hostile_submission_leaves_the_template_and_the_next_grade_alone(tmp_path, quick_course):
    """Forks a hundred daemons, writes at the template's files and outside its folder, kills every process it sees
    at import, and hangs in its feed-forward: the next submission through the same template gets the
    grade it gets without one."""
    tag = f"hostile-{uuid.uuid4().hex}"
    outside = tmp_path / "outside.txt"  # as a copy of the kit would be: a file of the grading user's
    outside.write_text("kept\n")
    ffn = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    hostile = mutant(tmp_path / "hostile", {
        "assignment1/layer_norm.py": [('"""\n\nimport torch', '"""\n\nimport torch\n' +
                                       HOSTILE.format(tag=tag, outside=str(outside)))],
        "assignment1/feed_forward.py": [(ffn, ffn + "        while True:\n            pass\n")]})
    honest = mutant(tmp_path / "honest", patches(*BUGS))
    fresh, attacked, forked = grade(quick_course, ("fresh", honest), ("template", hostile), ("template", honest),
                                    **{isolation.ENV_VAR: "namespaces"})
    assert attacked["report"]["isolation"] == "namespaces"
    assert attacked["report"]["score"] < attacked["report"]["max_score"]
    assert forked["template"] == attacked["template"] and forked["launches"] == 1  # the same template throughout
    assert forked["files"] == attacked["files"] == fresh["files"]
    assert without_timings(forked["report"]) == without_timings(fresh["report"])
    assert outside.read_text() == "kept\n"
    # the named daemons, and any fork of the template (its command line names the template's folder)
    alive = [p for p in os.listdir("/proc") if p.isdigit() and any(mark.encode() in cmdline(p)
                                                                   for mark in (tag, forked["dir"]))]
    assert not alive, f"the hostile submission's processes outlived its grade: {alive}"
