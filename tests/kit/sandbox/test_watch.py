"""`grade assignmentN --watch`, run as a student runs it: one re-grade per save, a half-written
file is a report and not a crash, Ctrl-C ends it cleanly."""

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, mutant
from tests.kit.mutants import BUGS

LN = "assignment1/layer_norm.py"
# SIGINT handled as in a terminal, whatever this process was started with (a shell's background
# job starts with it ignored, and Python keeps an ignored SIGINT)
START = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "sys.argv[0] = 'grade'; runpy.run_module('grader', run_name='__main__')")


class Watching:
    """A `grade --watch` process and the lines it has printed so far."""

    def __init__(self, *args: str, tmp: Path | None = None):
        env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100"}
        if tmp is not None:  # where the sandboxes go (hanging() looks there)
            env["TMPDIR"] = str(tmp)
        self.proc = subprocess.Popen([sys.executable, "-c", START, *args], cwd=ROOT, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._new: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._new.put(line)

    def grades(self) -> int:
        return sum(line.startswith("grade ") and " at " in line for line in self.lines)

    def await_grades(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.grades() < n:
            try:
                self.lines.append(self._new.get(timeout=max(deadline - time.monotonic(), 0.01)))
            except queue.Empty:
                raise AssertionError(f"no grade {n} within {timeout} s:\n{''.join(self.lines)[-3000:]}") from None

    def stop(self) -> tuple[int, str]:
        """Ctrl-C: its exit status and all it printed."""
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(60)
        finally:
            self.proc.kill()
        self.settle(1)
        return code, "".join(self.lines)

    def settle(self, seconds: float) -> None:
        """Collect what is printed within `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.lines.append(self._new.get(timeout=left))
            except queue.Empty:
                break


def layer_norm_score(path: Path) -> float:
    report = json.loads(path.read_text())
    return next(c["score"] for c in report["components"] if c["name"] == "LayerNorm")


def test_each_save_is_graded_once_and_ctrl_c_ends_the_watch(tmp_path):
    tree = mutant(tmp_path, {})
    out = tmp_path / "report.json"
    watching = Watching("assignment1", "--submission", str(tree), "--json", str(out), "--watch")
    try:
        watching.await_grades(1)
        assert layer_norm_score(out) == 10
        source = tree / LN
        correct = source.read_text()
        (old, new), = BUGS["layer_norm_unbiased_variance"].patches[LN]
        source.write_text(correct.replace(old, new))
        watching.await_grades(2)
        assert layer_norm_score(out) < 10
        assert "after a change to assignment1/layer_norm.py" in "".join(watching.lines)

        # saved mid-edit: a syntax error is a report for that file's components
        source.write_text(correct.replace("def forward(self", "def forward(self,,"))
        watching.await_grades(3)
        report = json.loads(out.read_text())
        norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
        assert norm["score"] == 0 and any("SyntaxError" in t["message"] for t in norm["tests"]), norm
        assert next(c for c in report["components"] if c["name"] == "PositionwiseFeedForward")["score"] == 8

        # a file the grade does not stage changes nothing; one save is one grade
        (tree / "assignment1" / "notes.txt").write_text("scratch\n")
        (tree / LN).write_text(correct)
        watching.await_grades(4)
        watching.settle(5)
        assert watching.grades() == 4, "".join(watching.lines)[-3000:]
        assert layer_norm_score(out) == 10
    finally:
        code, printed = watching.stop()
    assert code == 0 and "Traceback" not in printed, printed[-3000:]
    assert printed.rstrip().endswith("Stopped watching after 4 grades.")
    words = " ".join(printed.split())  # the console wraps at its width
    second = words[words.index("grade 2 at"):words.index("Watching", words.index("grade 2 at"))]
    assert "were not run again" in second  # the components that do not import layer_norm.py (grader.grading.reuse)


def test_watch_refuses_json_on_stdout(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader", "assignment1", "--watch", "--json", "-"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--json" in proc.stderr, proc.stderr


FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
HANG = FORWARD + "        print('HANGING', flush=True)\n        while True:\n            pass\n"


def slow_course(tmp_path: Path) -> Path:
    """The kit's course with a 300 s request timeout: a hang outlasts any wait of these tests."""
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    path = tmp_path / "course.toml"
    path.write_text(re.sub(r"^timeout_seconds = \d+", "timeout_seconds = 300", text, flags=re.M))
    return path


def await_hang(tmp: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the worker of a sandbox under `tmp` has printed HANGING: it is in the loop."""
    deadline = time.monotonic() + timeout
    while not any("HANGING" in f.read_text(errors="replace") for f in tmp.glob("grade-*/output.txt")):
        assert proc.poll() is None and time.monotonic() < deadline, "the grade never reached the hang"
        time.sleep(0.2)


@pytest.fixture
def open_tmp():
    """A TMPDIR of the test's own that a root grader's sandbox user can cross (pytest's tmp_path, under
    /tmp/pytest-of-root with mode 0700, is closed to it: the tiers without namespaces refuse it)."""
    folder = Path(tempfile.mkdtemp(prefix="grade-watch-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_ctrl_c_during_a_hang_ends_the_grade_without_waiting_for_its_deadline(tmp_path, open_tmp):
    tmp = open_tmp
    tree = mutant(tmp_path, {LN: [(FORWARD, HANG)]})
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-c", START, "assignment1", "--submission", str(tree), "--course",
                             str(slow_course(tmp_path))], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        await_hang(tmp, proc)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)  # the request's deadline is 300 s away
    finally:
        proc.kill()
    printed = proc.communicate()[0]
    assert code == 130 and "Traceback" not in printed, printed[-3000:]
    assert not list(tmp.iterdir()), list(tmp.iterdir())  # its sandbox and scratch folders are gone


def test_a_save_during_a_hang_cancels_that_grade_and_grades_the_fix(tmp_path, open_tmp):
    tmp = open_tmp
    tree = mutant(tmp_path, {LN: [(FORWARD, HANG)]})
    out = tmp_path / "report.json"
    watching = Watching("assignment1", "--submission", str(tree), "--course", str(slow_course(tmp_path)),
                        "--json", str(out), "--watch", tmp=tmp)
    try:
        await_hang(tmp, watching.proc)
        source = tree / LN
        source.write_text(source.read_text().replace(HANG, FORWARD))
        watching.await_grades(1)  # long before the hang's 300 s: that grade was cancelled
        assert layer_norm_score(out) == 10
        assert "after a change to assignment1/layer_norm.py" in "".join(watching.lines)
    finally:
        code, printed = watching.stop()
    assert code == 0 and "Traceback" not in printed, printed[-3000:]
    assert printed.rstrip().endswith("Stopped watching after 1 grade."), printed[-3000:]
