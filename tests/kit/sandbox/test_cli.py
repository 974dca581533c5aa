"""Bad input to the kit: one line naming the bad value, exit status 2, never a traceback."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, SOLUTIONS, cli_json, mutant, run_grade


def one_line_error(proc, *words, prog="grade"):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for word in words:
        assert word in lines[0], lines[0]


def test_unknown_assignment():
    one_line_error(run_grade("assignment9"), "'assignment9'")


def test_missing_submission_directory(tmp_path):
    one_line_error(run_grade("assignment1", "--submission", str(tmp_path / "nowhere")), "nowhere")


def test_missing_course_file(tmp_path):
    one_line_error(run_grade("assignment1", "--course", str(tmp_path / "course.toml")), "course.toml")


@pytest.mark.parametrize("text, named", [
    ("[course\nname = 1\n", "not valid TOML"),
    ('[course]\nname = "x"\nlanguage = "fr"\n', "course.language"),
    ('[course]\nname = "x"\n[limits]\ntimeout_seconds = -3\n', "limits.timeout_seconds"),
    ('[course]\nname = "x"\n[a1]\nfiles = ["x.py"]\n[a1.LayerNorm]\nfile = "y.py"\npoints = 1\npublic = ["t"]\n',
     "a1.LayerNorm.file"),
    ('[course]\nname = "x"\n[a1]\nfiles = ["x.py"]\n[a1.LayerNorm]\nfile = "x.py"\npoints = "ten"\npublic = ["t"]\n',
     "a1.LayerNorm.points"),
])
def test_broken_course_file(tmp_path, text, named):
    path = tmp_path / "course.toml"
    path.write_text(text)
    one_line_error(run_grade("assignment1", "--course", str(path)), named)


def test_json_into_a_missing_folder(tmp_path):
    one_line_error(run_grade("assignment1", "--json", str(tmp_path / "no" / "r.json")), "--json")


def test_unknown_device():
    proc = run_grade("assignment1", "--device", "tpu")
    assert proc.returncode == 2 and "tpu" in proc.stderr and "Traceback" not in proc.stderr




@pytest.mark.parametrize("steps", ["-5", "0", "many"])
def test_train_steps_must_be_positive(steps):
    one_line_error(run_grade("train", "assignment4", "--steps", steps), "--steps", repr(steps), prog="grade train")


def course_copy(folder: Path, *, kit_folders: bool, **limits: float) -> Path:
    """The kit's course.toml, written into `folder` with some limits changed; its folders are the
    kit's own (`kit_folders`) or the same names inside `folder`."""
    text = (ROOT / "course.toml").read_text()
    if kit_folders:
        for key in ("reference", "assignments", "suites"):
            text = re.sub(rf'^({key} = )"([^"]+)"', lambda m: f'{m.group(1)}"{ROOT / m.group(2)}"', text, flags=re.M)
    for name, value in limits.items():
        text, n = re.subn(rf"^{name} = [0-9.]+", f"{name} = {value}", text, flags=re.M)
        if n == 0:  # a limit the kit's course leaves unset is documented there as a comment
            text, n = re.subn(rf"^# {name}:.*$", f"{name} = {value}", text, flags=re.M)
        assert n == 1, name
    path = folder / "course.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("marks, line, problem", [
    (["### BEGIN SOLUTION"], 2, "never closed"),
    (["### END SOLUTION"], 2, "without"),
    (["### BEGIN SOLUTION", "### BEGIN SOLUTION", "### END SOLUTION"], 3, "inside another block"),
])
def test_malformed_solution_marker(tmp_path, marks, line, problem):
    course = course_copy(tmp_path, kit_folders=False)
    solution = tmp_path / "solutions" / "assignment1" / "layer_norm.py"
    solution.parent.mkdir(parents=True)
    solution.write_text("def f():\n" + "".join(f"    {m}\n" for m in marks) + "    return 1\n")
    for check in ([], ["--check"]):
        one_line_error(run_grade("stubs", *check, "--course", str(course)), f"{solution}:{line}:", problem)
    assert not (tmp_path / "assignments").exists()


def test_grading_leaves_the_current_folder_as_it_was_whatever_pytest_settings_are_set(tmp_path):
    """Nothing written where grade runs: no .hypothesis/ (Hypothesis's caches), no pytest cache. And the
    user's own pytest settings (PYTEST_ADDOPTS, PYTEST_PLUGINS: a shell's or a CI's) leave the grading
    suites alone: with these set, the suites did not run at all (pytest's usage error)."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env |= {"NO_COLOR": "1", "PYTEST_ADDOPTS": f"--junitxml={tmp_path / 'junit.xml'} -x --no-such-option",
            "PYTEST_PLUGINS": "no_such_plugin_module"}
    proc = subprocess.run([sys.executable, "-m", "grader", "assignment1", "--submission", str(SOLUTIONS),
                           "--course", str(ROOT / "course.toml"), "--json", "-"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["score"] == report["max_score"] > 0, report["score"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_timeout_names_the_limit_that_expired(tmp_path):
    """A hang is cut at timeout_seconds; a worker that cannot start within startup_seconds (it
    imports torch; 0.01 s) is cut at that. Each timeout names the limit that expired and where it is set."""
    from grader import load_course
    from grader.sandbox.child import protocol  # noqa: F401  imports torch: not inside the 0.01 s race below
    from grader.sandbox.host import Sandbox, WorkerFault

    # component_seconds set apart from timeout_seconds: on a loaded machine, the healthy components' checks
    # could spend an unset budget (6 x 1 s) and time out naming it, rightly, but not the limit asked about
    course = course_copy(tmp_path, kit_folders=True, timeout_seconds=1, component_seconds=600)
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    hang = forward + "        while True:\n            pass\n"
    tree = mutant(tmp_path, {"assignment1/feed_forward.py": [(forward, hang)]})
    report = cli_json(tree, "assignment1", "--course", str(course))
    hung = {(c["name"], t["message"]) for c in report["components"] for t in c["tests"] if t["status"] == "timeout"}
    assert any(name == "PositionwiseFeedForward" for name, _ in hung), hung
    for name, message in hung:
        assert "(course.toml [limits] " in message and "startup" not in message, message
        if name == "PositionwiseFeedForward":
            assert "(course.toml [limits] timeout_seconds = 1)" in message, message

    (tmp_path / "slow").mkdir()
    limits = load_course(course_copy(tmp_path / "slow", kit_folders=True, startup_seconds=0.01)).limits
    box = Sandbox(tree, {"assignment1": ["layer_norm.py"]}, limits)
    try:
        box.start()  # asked at once: the worker is still importing torch
        with pytest.raises(WorkerFault) as fault:
            box.request({"op": "import", "module": "assignment1.layer_norm"})
    finally:
        box.close()
    assert fault.value.kind == "timeout"
    message = fault.value.detail
    assert "while starting the worker (course.toml [limits] startup_seconds = 0.01)" in message, message
    assert "timeout_seconds" not in message, message
