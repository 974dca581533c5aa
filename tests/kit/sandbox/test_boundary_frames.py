"""The trust boundary, stack dumps: a timeout's frames are the worker's say-so (issue 43, item 2).

The grader reads source lines only from its own copy of the submission's staged files; a frame
naming any other path is shown as the worker's text, never opened."""

import sys

import pytest

from tests.kit.conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the worker's stack signal is POSIX")

# On the grader's stack signal, the submission writes a dump of its own naming the files it wants read
FORGER = '''
import os, signal, sys, time
import faulthandler

NAMES = {names!r}


def forge():
    here = os.path.dirname(os.path.abspath(__file__))
    prefix = here[:here.rindex("/submission/") + len("/submission/")]
    frames = "".join(f'  File "{{prefix}}{{name}}", line 1 in leak\\n' for name in NAMES)
    dump = ("Current thread 0x0001 (most recent call first):\\n" + frames +
            f'  File "{{prefix}}assignment1/probe.py", line 8 in forge\\n').encode()

    def answer(*_):
        os.write(int(sys.argv[3]), dump)
    faulthandler.unregister(signal.SIGUSR1)
    signal.signal(signal.SIGUSR1, answer)
    while True:
        time.sleep(0.05)
'''


def test_a_forged_stack_dump_opens_nothing_outside_the_staged_submission(tmp_path):
    """The dump names a secret of the grader's machine by absolute path (after the submission's
    prefix), through /proc/self/cwd, and the reference solution: none of their lines reach the
    fault; the submission's own staged file is still read (line 7 of probe.py)."""
    from grader.limits import Limits
    from grader.sandbox.host import Sandbox, WorkerFault

    secret = tmp_path / "secret.py"
    secret.write_text("SECRET_OF_THE_GRADER = 1\n")
    reference = ROOT / "solutions" / "assignment1" / "layer_norm.py"
    names = [f"/{secret}", f"/proc/self/cwd/{reference.relative_to(ROOT)}", str(reference), f"/{reference}"]
    tree = tmp_path / "probe"
    (tree / "assignment1").mkdir(parents=True)
    (tree / "assignment1" / "__init__.py").touch()
    (tree / "assignment1" / "probe.py").write_text(FORGER.format(names=names))
    box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=3))
    try:
        box.request({"op": "import", "module": "assignment1.probe"})
        with pytest.raises(WorkerFault) as caught:
            box.request({"op": "call", "target": "assignment1.probe:forge", "args": []})
    finally:
        box.close()
    fault = caught.value
    assert fault.kind == "timeout", fault.detail
    where = "\n".join(fault.where)
    first = reference.read_text().splitlines()[0].strip()
    assert "SECRET_OF_THE_GRADER" not in where and first not in where, where
    assert any(w.startswith(f"/{secret}:1 in leak: ") and w.endswith(": ") for w in fault.where), where
    # the submission's own file, from the grader's copy: line 8 of FORGER as staged
    assert fault.where[0].startswith("assignment1/probe.py:8 in forge: def forge():"), where


def test_frames_read_a_bounded_head_of_staged_files_only(tmp_path):
    """Unit level: a staged file is read up to MAX_SOURCE_READ bytes; a name that is not staged is
    never opened (a FIFO, which would block an open, is named and the call returns)."""
    import os

    from grader.sandbox import faults

    staged = tmp_path / "submission"
    (staged / "a").mkdir(parents=True)
    (staged / "a" / "m.py").write_text("x = 1\n" + "y = 2\n" * (faults.MAX_SOURCE_READ // 6 + 10))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    prefix = f"{staged}/"
    dump = (f'Current thread 0x1 (most recent call first):\n  File "{prefix}a/m.py", line 1 in f\n'
            f'  File "{prefix}a/m.py", line {faults.MAX_SOURCE_READ // 6 + 5} in g\n'
            f'  File "{prefix}../fifo", line 1 in h\n  File "{prefix}{fifo}", line 1 in i\n')
    frames = faults.student_frames(dump, prefix, faults.staged_files(staged))
    assert frames[-1] == "a/m.py:1 in f: x = 1"
    assert frames[-2].endswith(" in g: ")  # past the bounded head: not read
    assert all(f.endswith(": ") for f in frames[:2]), frames
