"""`grade nbgrader` through nbgrader itself: generate, collect, autograde, export, feedback.

Five students hand in assignment1: ada (correct) and bob (a LayerNorm bug) as LMS archives
through `nbgrader zip_collect`; cyd (a syntax error, and a notebook that is not JSON), dan (a
forward that hangs when gradients are checked) and eve (hostile) straight into submitted/. Every score in
nbgrader's gradebook and CSV must equal what `grade` itself reports for the same tree; no
feedback file may show a hidden check; nothing eve hands in may run outside the grader's
sandbox. The course is the kit's with 3 s timeouts (conftest.quick_course), so dan is cheap.
"""

import csv
import os
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from grader import load_course
from grader.authoring.stubs import BEGIN, END
from grader.course import Performance
from grader.gradebook import cells
from tests.kit.conftest import ROOT, SOLUTIONS, cli_json, run_grade

pytestmark = pytest.mark.xdist_group("nbgrader")  # one pipeline, built once, for every test here

STUDENTS = ("ada", "bob", "cyd", "dan", "eve")
A1 = "assignment1"


def _solution(name: str) -> str:
    """A solution file as a student would hand it in: without nbgrader's markers."""
    text = (SOLUTIONS / A1 / name).read_text()
    return "".join(line for line in text.splitlines(keepends=True) if line.strip() not in (BEGIN, END))


def _patch(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"patch does not apply: {old!r}"
    return text.replace(old, new)


def _trees(course, canaries: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Each student's files, relative to their assignment folder."""
    files = ["__init__.py", *course.assignment(A1).files]
    correct = {f"{A1}/{name}": _solution(name) for name in files}
    stubs = {f"{A1}/{name}": (ROOT / "assignments" / A1 / name).read_text() for name in files}
    trees = {"ada": correct}
    trees["bob"] = {**correct, f"{A1}/layer_norm.py": _patch(correct[f"{A1}/layer_norm.py"], "unbiased=False",
                                                             "unbiased=True")}
    trees["cyd"] = {**correct, f"{A1}/feed_forward.py": _patch(
        correct[f"{A1}/feed_forward.py"], "def forward(self, x: torch.Tensor) -> torch.Tensor:",
        "def forward(self, x: torch.Tensor) -> torch.Tensor"), f"{A1}.ipynb": "this is not a notebook"}
    trees["dan"] = {**correct, f"{A1}/feed_forward.py": _patch(
        correct[f"{A1}/feed_forward.py"], "        h = F.relu(", "        while x.requires_grad:\n"
        "            pass\n        h = F.relu(")}
    # eve: a correct LayerNorm that, on import, prints a fake report, writes to stderr and
    # tries to write outside its folder; a `grader` package and an `ipykernel_launcher.py`
    # that would take over the notebook's kernel if it imported them; stubs elsewhere
    kernel = f"open({str(canaries['kernel'])!r}, 'a').write(__name__ + '\\n')\n"
    noisy = ("import os as _os\nimport sys as _sys\n"
             "print('{\"assignment\": \"assignment1\", \"score\": 40, \"components\": []}')\n"
             "_sys.stderr.write('Traceback (most recent call last):\\n  fake\\n')\n_os.write(2, b'more stderr\\n')\n"
             f"try:\n    open({str(canaries['sandbox'])!r}, 'w').write('tampered')\nexcept OSError:\n    pass\n")
    trees["eve"] = {**stubs, f"{A1}/layer_norm.py": noisy + correct[f"{A1}/layer_norm.py"],
                    "ipykernel_launcher.py": kernel + "import sys\nsys.path = [p for p in sys.path if p != '']\n"
                    "from ipykernel import kernelapp\nkernelapp.launch_new_instance()\n",
                    "grader/__init__.py": kernel,
                    "grader/gradebook/__init__.py": kernel,
                    "grader/gradebook/cells.py": kernel + "def run_grader(**kwargs):\n    return {}\n\n"
                    "def component(report, name, *, points):\n    return points\n"}
    return trees


def _hostile_notebook(released: Path, canary: Path) -> str:
    """The released notebook with a cell added first (it would break the grader's run and leave
    a trace), a grade cell edited to claim its points, and a cell added last that prints a score."""
    nb = nbformat.read(str(released), as_version=4)
    first = nbformat.v4.new_code_cell(f"open({str(canary)!r}, 'a').write('added cell\\n')\n"
                                      "import subprocess\nsubprocess.Popen = None")
    nb.cells.insert(0, first)
    last = next(c for c in nb.cells if c.get("id") == "TransformerEmbedding")
    last.source = "6  # full marks"
    nb.cells.append(nbformat.v4.new_code_cell("print(40)\n40"))
    return nbformat.writes(nb)


def _write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def _nbgrader(course_dir: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-5000:])
    return proc


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, quick_course):
    """The whole pipeline, once: what each step left behind, and grade's own JSON per student."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    course = load_course(quick_course)
    course_dir = tmp / "course"
    canaries = {"kernel": tmp / "kernel-canary", "sandbox": tmp / "sandbox-canary"}
    # nbgrader's gradebook runs `alembic`: the environment's scripts first on PATH; and no
    # personal Jupyter or IPython settings or kernels of whoever runs the tests (the kernel is
    # the environment's own python3)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"), "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"), "IPYTHONDIR": str(tmp / "ipython")}

    proc = run_grade("nbgrader", str(course_dir), "--assignment", A1, "--course", str(quick_course),
                     "--timeout", "600")
    assert proc.returncode == 0, proc.stderr
    _nbgrader(course_dir, env, "generate_assignment", A1)

    trees = _trees(course, canaries)
    archive = course_dir / "downloaded" / A1 / "archive"
    archive.mkdir(parents=True)
    for student in ("ada", "bob"):
        with zipfile.ZipFile(archive / f"{student}_attempt_2026-05-01.zip", "w") as z:
            for rel, text in trees[student].items():
                z.writestr(f"my-submission/{rel}", text)
            z.writestr("my-submission/notes.txt", "not collected")
            z.writestr(f"__MACOSX/my-submission/{A1}/layer_norm.py", "not collected either")
    _nbgrader(course_dir, env, "zip_collect", A1)
    released = course_dir / "release" / A1 / f"{A1}.ipynb"
    for student in ("cyd", "dan", "eve"):
        _write(course_dir / "submitted" / student / A1, trees[student])
    (course_dir / "submitted" / "eve" / A1 / f"{A1}.ipynb").write_text(_hostile_notebook(released, canaries["kernel"]))

    proc = run_grade("nbgrader", "prepare", str(course_dir), "--assignment", A1)
    assert proc.returncode == 0, proc.stderr
    prepared = proc.stdout.split()
    # grade's own reports of the same trees, graded meanwhile (it mostly waits on dan's hang)
    with ThreadPoolExecutor(max_workers=1) as pool:
        futures = {s: pool.submit(cli_json, course_dir / "submitted" / s / A1, A1, "--course", str(quick_course))
                   for s in STUDENTS}
        _nbgrader(course_dir, env, "autograde", A1)
        _nbgrader(course_dir, env, "export")
        _nbgrader(course_dir, env, "generate_feedback", A1)
        direct = {s: future.result() for s, future in futures.items()}
    return {"course": course, "dir": course_dir, "trees": trees, "canaries": canaries, "prepared": prepared,
            "direct": direct}


def test_release_holds_the_stubs_and_no_solution(pipeline):
    released = pipeline["dir"] / "release" / A1
    files = sorted(p.relative_to(released).as_posix() for p in released.rglob("*") if p.is_file())
    stubs = [f"{A1}/{name}" for name in ("__init__.py", *pipeline["course"].assignment(A1).files)]
    assert files == sorted([f"{A1}.ipynb", *stubs])
    for rel in stubs:
        text = (released / rel).read_text()
        assert text == (ROOT / "assignments" / rel).read_text(), rel
        assert BEGIN not in text and END not in text, rel
        assert rel.endswith("__init__.py") or "NotImplementedError" in text, rel
    # a line of every solution body, e.g. LayerNorm's variance, is nowhere in the release
    assert "unbiased=False" not in (released / A1 / "layer_norm.py").read_text()


def test_zip_collect_and_prepare_place_the_files_grade_reads(pipeline):
    for student in ("ada", "bob"):
        folder = pipeline["dir"] / "submitted" / student / A1
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        expected = sorted([*pipeline["trees"][student], f"{A1}.ipynb", "timestamp.txt"])
        assert [f for f in files if f != "timestamp.txt"] == [f for f in expected if f != "timestamp.txt"]
        for rel, text in pipeline["trees"][student].items():
            assert (folder / rel).read_text() == text
    assert pipeline["prepared"] == ["supplied:", "ada", "supplied:", "bob", "replaced:", "cyd", "supplied:", "dan",
                                    "kept:", "eve"]


def _gradebook(course_dir: Path) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    scores: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            submission = gb.find_submission(A1, student)
            [notebook] = submission.notebooks
            scores[student] = {g.name: g.score for g in notebook.grades}
            scores[student]["total"] = submission.score
    return scores


def test_gradebook_and_csv_match_grade(pipeline):
    gradebook = _gradebook(pipeline["dir"])
    with open(pipeline["dir"] / "grades.csv", newline="") as f:
        csv_totals = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f) if row["assignment"] == A1}
    assert sorted(csv_totals) == sorted(STUDENTS)
    seen = {}
    for student in STUDENTS:
        report = pipeline["direct"][student]
        direct = {c["name"]: c["score"] for c in report["components"]}
        got = {name: score for name, score in gradebook[student].items() if name != "total"}
        assert sorted(got) == sorted(direct), student
        for name, score in direct.items():
            assert got[name] == pytest.approx(score, abs=0.01), (student, name, got, direct)
        assert gradebook[student]["total"] == pytest.approx(report["score"], abs=0.01), student
        assert csv_totals[student] == pytest.approx(report["score"], abs=0.01), student
        seen[student] = direct
    # the trees are what they claim to be, so that the comparison means something
    full = {c.name: c.points for c in pipeline["course"].assignment(A1).components}
    assert seen["ada"] == full
    assert seen["bob"]["LayerNorm"] < full["LayerNorm"] and seen["bob"]["PositionalEncoding"] == full[
        "PositionalEncoding"]
    assert seen["cyd"]["PositionwiseFeedForward"] == 0 and seen["cyd"]["LayerNorm"] == full["LayerNorm"]
    assert 0 < seen["dan"]["PositionwiseFeedForward"] < full["PositionwiseFeedForward"]
    assert seen["eve"] == {**{name: 0 for name in full}, "LayerNorm": full["LayerNorm"]}


def test_students_py_files_are_graded_not_the_stubs(pipeline):
    for student in STUDENTS:
        for rel, text in pipeline["trees"][student].items():
            if rel.startswith(f"{A1}/"):
                assert (pipeline["dir"] / "autograded" / student / A1 / rel).read_text() == text, (student, rel)


def test_grade_cells_end_in_a_score_and_never_in_an_error(pipeline):
    released = nbformat.read(str(pipeline["dir"] / "release" / A1 / f"{A1}.ipynb"), as_version=4)
    for student in STUDENTS:
        nb = nbformat.read(str(pipeline["dir"] / "autograded" / student / A1 / f"{A1}.ipynb"), as_version=4)
        # eve's added and edited cells are gone: what ran is the released notebook
        assert [c.source for c in nb.cells] == [c.source for c in released.cells], student
        for cell in nb.cells:
            outputs = cell.get("outputs", [])
            assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"], (student, cell)
            if cell.metadata.get("nbgrader", {}).get("grade"):
                [result] = [o for o in outputs if o.output_type == "execute_result"]
                assert 0 <= float(result.data["text/plain"]) <= cell.metadata.nbgrader.points


def test_nothing_eve_hands_in_runs_outside_the_sandbox(pipeline):
    assert not pipeline["canaries"]["kernel"].exists(), pipeline["canaries"]["kernel"].read_text()
    # with namespaces the submission cannot reach this folder; the process sandbox runs it as you
    if pipeline["direct"]["eve"]["isolation"] == "namespaces":
        assert not pipeline["canaries"]["sandbox"].exists()


def test_feedback_shows_no_hidden_check(pipeline):
    course = pipeline["course"]
    hidden = [chk.id for comp in course.assignment(A1).components for chk in comp.checks if chk.tier == "hidden"]
    suite = course.suites / "hidden" / f"test_{A1}.py"
    secrets = [*hidden, str(suite), str(suite.parent), f"hidden/test_{A1}.py"]
    feedback = pipeline["dir"] / "feedback"
    files = [p for p in feedback.rglob("*") if p.is_file()]
    assert {p.relative_to(feedback).parts[0] for p in files if p.suffix == ".html"} == set(STUDENTS)
    for path in files:
        text = path.read_text(errors="replace")
        assert not [s for s in secrets if s in text], path
    # the feedback does show the public side: a failing public check of bob's by id
    bob = (feedback / "bob" / A1 / f"{A1}.html").read_text()
    assert "FAILED" in bob and "layer_norm_matches_torch" in bob


def test_a_score_is_always_a_number_nbgrader_accepts():
    assert [cells.clamp(s, 10) for s in (7.456, 12, -1, float("nan"), float("inf"), "10", True, None)] == [
        7.46, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert cells.component(None, "LayerNorm", points=10) == 0.0


def test_bad_input_is_one_line(tmp_path):
    for args, named in [(("nbgrader", str(tmp_path / "c"), "--assignment", "assignment9"), "'assignment9'"),
                        (("nbgrader", "prepare", str(tmp_path), "--assignment", A1), "generate_assignment"),
                        (("nbgrader", str(tmp_path / "c"), "--timeout", "0"), "'0'")]:
        proc = run_grade(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and named in lines[0], (args, proc.stderr)
    assert not (tmp_path / "c").exists()


def test_the_notebook_follows_nbgraders_schema(quick_course):
    from nbgrader.nbgraderformat import MetadataValidator

    from grader.gradebook.course import notebook

    course = load_course(quick_course)
    nb = notebook(course=course, assignment=A1)
    MetadataValidator().validate_nb(nb)
    graded = {c.id: c.metadata.nbgrader.points for c in nb.cells if c.metadata.nbgrader["grade"]}
    assert graded == {c.name: c.points for c in course.assignment(A1).components}
    assert all(c.metadata.nbgrader["locked"] for c in nb.cells)
    # where the performance tier gives points, the gradebook's total needs a cell of its own
    timed = replace(course, performance=Performance({"LayerNorm": "attention"}, points=3))
    nb = notebook(course=timed, assignment=A1)
    MetadataValidator().validate_nb(nb)
    assert nb.cells[-1].id == "performance" and nb.cells[-1].metadata.nbgrader.points == 3
    assert cells.performance({"performance": {"score": 1.5, "max_score": 3, "entries": []}}, points=3) == 1.5
