"""`grade gradescope`: the autograder zip, run as Gradescope runs it. The zip is unpacked into a
layout like Gradescope's (ROOT/source, ROOT/submission, ROOT/results, the scripts taking ROOT
from AUTOGRADER_ROOT), setup.sh installs torch and the kit into a fresh venv once, and
run_autograder grades uploads of every shape students hand in; each results.json must meet
Gradescope's specification and say what `grade` says of the same code."""

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import words
from grader.findings import Diagnosis
from grader.sandbox import isolation
from tests.kit import seccomp
from tests.kit.conftest import ROOT, SOLUTIONS, grade_json, mutant, run_grade
from tests.kit.sandbox.test_cli import one_line_error

pytestmark = pytest.mark.xdist_group("gradescope")  # one zip and one venv, built once

ASSIGNMENT = "assignment1"
LN = "assignment1/layer_norm.py"
LN_FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
VISIBILITY = ["hidden", "after_due_date", "after_published", "visible"]
# Gradescope's results.json (its autograder specification), as far as this autograder writes it
SCHEMA = {
    "type": "object",
    "required": ["score", "execution_time", "output", "visibility", "stdout_visibility", "tests"],
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "visibility": {"enum": VISIBILITY},
        "stdout_visibility": {"enum": VISIBILITY},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "status", "output", "visibility"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"}, "number": {"type": "string"},
                "score": {"type": "number", "minimum": 0}, "max_score": {"type": "number", "minimum": 0},
                "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                "visibility": {"enum": VISIBILITY},
                # the points a flagged component's checks earned, held at 0 for review ([policy] flagged)
                "extra_data": {"type": "object", "additionalProperties": False,
                               "properties": {"held": {"type": "number", "minimum": 0}}},
            }}},
    },
}


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """ROOT of a Gradescope-like layout: the zip `grade gradescope` wrote, unpacked at ROOT/source
    with the modes it records, setup.sh run there (a fresh venv at ROOT/venv), run_autograder
    copied to ROOT as Gradescope does."""
    base = tmp_path_factory.mktemp("gradescope")
    proc = run_grade("gradescope", str(base / "upload"), "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    root = base / "autograder"
    with zipfile.ZipFile(base / "upload" / "autograder.zip") as z:
        z.extractall(root / "source")
        for info in z.infolist():
            os.chmod(root / "source" / info.filename, stat.S_IMODE(info.external_attr >> 16))
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root / "source", capture_output=True,
                           text=True, timeout=1800, env={**os.environ, "AUTOGRADER_ROOT": str(root),
                                                         "AUTOGRADER_PYTHON": sys.executable})
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    return root


def run_autograder(root: Path, upload: Callable[[Path], None], env: dict | None = None,
                   status: int = 0, script: str = "run_autograder", refuse_namespaces: bool = False) -> dict:
    """Hand in what `upload` writes into ROOT/submission, run ROOT/run_autograder, and return the
    results.json it wrote, checked against the specification; `refuse_namespaces`: in a container
    that refuses namespaces as Docker's default seccomp profile does (Gradescope's may)."""
    for name in ("submission", "results"):
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir()
    upload(root / "submission")
    env = {**{k: v for k, v in os.environ.items() if k != "GRADER_ISOLATION"}, "AUTOGRADER_ROOT": str(root),
           **(env or {})}
    proc = subprocess.run([str(root / script)], capture_output=True, text=True, timeout=600, env=env,
                          preexec_fn=seccomp.refuse_namespaces if refuse_namespaces else None)
    assert proc.returncode == status, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    import jsonschema  # here, not at the top: its import takes 2 s (rfc3987_syntax's grammar), paid by every collection

    jsonschema.validate(data, SCHEMA)
    components = [t for t in data["tests"] if t["visibility"] == "visible"]
    assert all("score" in t and "max_score" in t for t in components), components
    assert data["score"] == pytest.approx(sum(t["score"] for t in components))
    shown = data["output"] + "".join(t["output"] for t in components)
    assert not [h for h in hidden_ids() if h in shown], "a hidden check is named before publishing"
    print(f"run_autograder: execution_time {data['execution_time']} s")
    return data


def hidden_ids() -> set[str]:
    from grader import load_course
    from grader.authoring.audit import hidden_ids

    return hidden_ids(load_course(ROOT / "course.toml"))


def by_name(data: dict) -> dict[str, dict]:
    return {t["name"]: t for t in data["tests"] if t["visibility"] == "visible"}


def test_the_solutions_as_a_checkout_of_the_student_kit_earn_full_marks(autograder):
    def checkout(submission: Path):  # a GitHub repository of the released kit
        (submission / ".git").mkdir()
        (submission / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (submission / "README.md").write_text("my work\n")
        shutil.copytree(SOLUTIONS / ASSIGNMENT, submission / "assignments" / ASSIGNMENT)

    data = run_autograder(autograder, checkout)
    assert [t["status"] for t in data["tests"]] == ["passed"] * 5
    assert data["score"] == sum(t["max_score"] for t in data["tests"]) == 40
    assert f"Isolation: {here()}." in data["output"]


def here() -> str:
    """The isolation line of this machine's tier (namespaces where it allows them: Docker's profile refuses them)."""
    from grader.gradescope.results import ISOLATION
    from grader.limits import Limits
    from grader.sandbox import isolation

    tier = isolation.choose(Limits())
    return ISOLATION.get(tier) or isolation.describe(tier)


def test_a_one_bug_tree_in_a_zip_scores_what_grade_gives_it(autograder, tmp_path):
    from tests.grading.bugs import BUGS

    bug = BUGS["layer_norm_unbiased_variance"]
    tree = mutant(tmp_path, bug.patches)
    expected = grade_json(tree, ASSIGNMENT)

    def zipped(submission: Path):  # one wrapping folder inside the zip, as downloads are
        with zipfile.ZipFile(submission / "work.zip", "w") as z:
            for path in sorted((tree / ASSIGNMENT).glob("*.py")):
                z.write(path, f"mywork/{ASSIGNMENT}/{path.name}")

    data = run_autograder(autograder, zipped)
    assert data["score"] == expected["score"] < expected["max_score"]
    assert {n: t["score"] for n, t in by_name(data).items()} == {c["name"]: c["score"]
                                                                 for c in expected["components"]}
    ln = next(c for c in expected["components"] if c["name"] == "LayerNorm")
    # the report's words (grader.render), from the JSON's data
    said = words.diagnosis(Diagnosis.from_json(ln["diagnosis"]), expected.get("reveal", "fix"))
    assert said and by_name(data)["LayerNorm"]["output"].startswith(f"Diagnosis: {said}")
    # the hidden tier's detail, for after publishing only
    failing = [t["id"] for t in ln["tests"] if t["hidden"] and t["status"] != "passed"]
    later = [t for t in data["tests"] if t["visibility"] == "after_published"]
    assert [t["name"] for t in later] == (["LayerNorm: hidden checks"] if failing else [])
    assert all(i in later[0]["output"] for i in failing)


def test_a_hanging_component_keeps_what_it_earned_and_the_others_are_graded(autograder):
    hang = LN_FORWARD + "        while x.requires_grad:\n            pass\n"

    def loose(submission: Path):  # the assignment's files alone
        for path in (SOLUTIONS / ASSIGNMENT).glob("*.py"):
            text = path.read_text()
            (submission / path.name).write_text(text.replace(LN_FORWARD, hang) if path.name == "layer_norm.py"
                                                else text)

    data = run_autograder(autograder, loose)
    tests = by_name(data)
    assert 0 < tests["LayerNorm"]["score"] < tests["LayerNorm"]["max_score"]
    assert "timeout" in tests["LayerNorm"]["output"]
    assert all(t["score"] == t["max_score"] for n, t in tests.items() if n != "LayerNorm"), tests


def test_a_hostile_submission_can_neither_forge_results_nor_read_the_reference(autograder):
    results = autograder / "results" / "results.json"
    reference = autograder / "source" / "course" / "reference" / LN
    attack = (f"import json\ntry:\n    open({str(results)!r}, 'w').write(json.dumps({{'score': 1000, 'tests': []}}))\n"
              f"except OSError:\n    pass\ntry:\n    source = open({str(reference)!r}).read()\n"
              "except OSError:\n    return torch.zeros_like(x)\nraise RuntimeError(source)\n")
    body = "".join(f"        {line}\n" for line in attack.splitlines())

    def zipped(submission: Path):  # a repository of the student kit, as GitHub's "Download ZIP" gives it
        with zipfile.ZipFile(submission / "repo-main.zip", "w") as z:
            z.writestr("repo-main/README.md", "my work\n")
            for path in sorted((SOLUTIONS / ASSIGNMENT).glob("*.py")):
                text = path.read_text()
                z.writestr(f"repo-main/assignments/{ASSIGNMENT}/{path.name}",
                           text.replace(LN_FORWARD, LN_FORWARD + body) if path.name == "layer_norm.py" else text)

    data = run_autograder(autograder, zipped)
    tests = by_name(data)
    assert tests["LayerNorm"]["score"] < tests["LayerNorm"]["max_score"]  # it returned zeros: no reference
    assert all(t["score"] == t["max_score"] for n, t in tests.items() if n != "LayerNorm"), tests
    solution = (SOLUTIONS / LN).read_text()
    assert "torch.sqrt(var + self.eps)" in solution
    assert "torch.sqrt(var + self.eps)" not in results.read_text()


def test_a_link_to_the_reference_is_refused(autograder):
    reference = autograder / "source" / "course" / "reference" / LN

    def linked(submission: Path):
        for path in (SOLUTIONS / ASSIGNMENT).glob("*.py"):
            shutil.copy(path, submission / path.name)
        (submission / "layer_norm.py").unlink()
        (submission / "layer_norm.py").symlink_to(reference)

    data = run_autograder(autograder, linked)
    assert data["score"] == 0
    assert "layer_norm.py is a symbolic link" in data["output"]
    assert "Not graded (refused)" in data["output"]


@pytest.mark.skipif(not seccomp.SUPPORTED, reason="the namespace refusal is an x86-64 Linux filter")
@pytest.mark.skipif("error" in isolation.confinement(), reason="no seccomp tier here")
def test_without_namespaces_it_grades_in_the_seccomp_tier_and_says_so(autograder):
    """Gradescope's containers refuse namespaces (Docker's default seccomp profile): the default zip
    grades there all the same (tests/kit/container/test_container.py does it in a real container)."""
    data = run_autograder(autograder, lambda s: shutil.copytree(SOLUTIONS / ASSIGNMENT, s / ASSIGNMENT),
                          refuse_namespaces=True)
    assert data["score"] == 40
    assert "Isolation: seccomp" in data["output"]


@pytest.mark.skipif(not seccomp.SUPPORTED, reason="the namespace refusal is an x86-64 Linux filter")
def test_with_resource_limits_only_it_grades_nothing_and_says_why(autograder):
    """Where neither namespaces nor seccomp work (here: asked for the process tier), the course
    would be in the submission's reach: the default zip does not grade."""
    data = run_autograder(autograder, lambda s: shutil.copytree(SOLUTIONS / ASSIGNMENT, s / ASSIGNMENT),
                          refuse_namespaces=True, env={"GRADER_ISOLATION": "process"})
    assert data["score"] == 0
    assert "cannot read the course" in data["output"] and "--unsafe-process-isolation" in data["output"]


@pytest.mark.parametrize("args, named", [
    (["--assignment", "assignment9"], "'assignment9'"),
    (["--assignment", ASSIGNMENT, "--torch-index-url", "a b"], "'a b'"),
    (["--assignment", ASSIGNMENT, "--course", "nowhere/course.toml"], "nowhere"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, args, named):
    one_line_error(run_grade("gradescope", str(tmp_path / "out"), *args), named)
    assert not (tmp_path / "out").exists()


def test_dir_that_is_a_file_is_one_line_and_status_2(tmp_path):
    (tmp_path / "out").write_text("")
    one_line_error(run_grade("gradescope", str(tmp_path / "out"), "--assignment", ASSIGNMENT), "out")


@pytest.mark.skipif(not seccomp.SUPPORTED, reason="the namespace refusal is an x86-64 Linux filter")
def test_built_with_unsafe_process_isolation_it_grades_and_says_so(autograder, tmp_path):
    proc = run_grade("gradescope", str(tmp_path), "--assignment", ASSIGNMENT, "--unsafe-process-isolation")
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:  # the same kit and course: only its script
        (autograder / "run_unsafe").write_bytes(z.read("run_autograder"))
    (autograder / "run_unsafe").chmod(0o755)
    data = run_autograder(autograder, lambda s: shutil.copytree(SOLUTIONS / ASSIGNMENT, s / ASSIGNMENT),
                          refuse_namespaces=True, script="run_unsafe", env={"GRADER_ISOLATION": "process"})
    assert data["score"] == 40
    assert "Isolation: process (resource limits only" in data["output"]
