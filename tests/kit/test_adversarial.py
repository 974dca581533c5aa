"""The adversarial suite: every hostile submission of tests/kit/attacks.py, graded through the real CLI.

For each attack: the attacked component earns what its honest code earns (nothing for a
cheat), every other component keeps its points, the JSON is valid, the report carries no
escape sequence of the submission's, no file outside the scratch folder changes (the kit,
a neighbouring submission, the Python installation's startup hooks), no process of the
submission outlives the grade, and nothing reaches the network.
"""

import hashlib
import json
import os
import socket
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest

from tests.kit.attacks import ATTACKS, PROBE_PORT, build
from tests.kit.conftest import ROOT, assert_loses_only_in, cli_json, full_marks, mutant, run_grade, scores

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


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_earns_nothing_and_harms_nothing(tmp_path, quick_course, name):
    attack = ATTACKS[name]
    tree = build(tmp_path / "attacker", attack)
    neighbour = mutant(tmp_path / "neighbour", {})
    before = fingerprint(*WATCHED, neighbour)
    probe = Probe(PROBE_PORT) if name == "calls_home" else None
    try:
        proc = run_grade("assignment1", "--submission", str(tree), "--json", "-", "--course", str(quick_course))
    finally:
        if probe:
            probe.close()
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "\x1b" not in proc.stderr  # NO_COLOR and TERM=dumb: any escape would be the submission's
    report = json.loads(proc.stdout)
    if attack.needs_namespaces:
        assert report["isolation"] == "namespaces", f"{name} is stopped by namespace isolation only"
    got, full = scores(report), full_marks(report)
    others = {n: s for n, s in got.items() if n != attack.component and s != full[n]}
    assert not others, f"{name} cost points outside {attack.component}: {others}"
    if attack.keeps:
        assert got[attack.component] == full[attack.component], report
    else:
        assert got[attack.component] < full[attack.component], report
    assert fingerprint(*WATCHED, neighbour) == before, "a file outside the scratch folder changed"
    deadline = time.monotonic() + 5
    while leftover_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftover_processes(), leftover_processes()
    assert probe is None or probe.reached == 0, "the submission reached a loopback listener"


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

