"""The kit's own processes in sessions of their own (a sandbox's workers, the template of its
restarts) are registered in the `KitProcesses` the sandbox is handed, and taken out once reaped
(grader.sandbox.reap): reap.orphans never takes one for a submission's orphan. The registry is an
object passed in: a sandbox given its own leaves the process's `reap.KIT_PROCESSES` alone."""

import subprocess

import pytest

from grader.limits import Limits
from grader.sandbox import reap
from grader.sandbox.host import Sandbox, WorkerFault

PROBE = "import os\n\n\ndef one():\n    return 1\n\n\ndef exits():\n    os._exit(3)\n"


def call(box: Sandbox, name: str):
    return box.request({"op": "call", "target": f"assignment1.probe:{name}", "args": []})


def test_a_sandbox_registers_its_worker_and_its_restarts_template_in_the_registry_it_is_given(tmp_path):
    tree = tmp_path / "probe"
    (tree / "assignment1").mkdir(parents=True)
    (tree / "assignment1" / "__init__.py").touch()
    (tree / "assignment1" / "probe.py").write_text(PROBE)
    kit = reap.KitProcesses()
    box = Sandbox(tree, {"assignment1": ["probe.py"]}, Limits(timeout_seconds=60), kit=kit)
    try:
        box.request({"op": "import", "module": "assignment1.probe"})
        assert call(box, "one") == 1
        assert isinstance(box.proc, subprocess.Popen)
        first = box.proc.pid
        assert first in kit and first not in reap.KIT_PROCESSES
        with pytest.raises(WorkerFault):
            call(box, "exits")
        assert first not in kit  # reaped: its pid may be an orphan's next
        box.request({"op": "import", "module": "assignment1.probe"})  # forked from a template of its own
        assert call(box, "one") == 1
        assert box.own_template is not None
        server = box.own_template.pid
        assert server is not None and server in kit and server not in reap.KIT_PROCESSES
    finally:
        box.close()
    assert server not in kit  # the template closed with the sandbox, and was reaped
