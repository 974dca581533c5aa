"""`grade nbgrader` through nbgrader itself, as the README's commands run it: generate, release,
fetch and submit, collect, autograde, export, feedback.

Five students hand in assignment1: ada (correct) through nbgrader's exchange (fetch, `grade`
on her own, submit, collect), bob (a classic LayerNorm bug and a TokenEmbedding shifted by one
after its scale, a bug the table does not name) as an LMS archive through `nbgrader zip_collect`;
cyd (a syntax error, and a notebook
that is not JSON), dan (a forward that hangs when gradients are checked) and eve (hostile)
straight into submitted/. Every score in nbgrader's gradebook and CSV must equal what `grade`
itself reports for the same tree; the feedback must carry the public detail of the terminal
report and no hidden check; nothing students get may name a path of the instructor's; nothing
eve hands in may run outside the grader's sandbox. The course is the kit's with 3 s timeouts
(conftest.quick_course), so dan is cheap.
"""

import csv
import html
import os
import re
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from grader import load_course
from grader.authoring.audit import audit
from grader.authoring.stubs import BEGIN, END
from grader.course import Performance
from grader.gradebook import cells
from tests.kit.conftest import ROOT, SOLUTIONS, cli_json, run_grade

pytestmark = pytest.mark.xdist_group("nbgrader")  # one pipeline (autograde: kernels), built once

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
    # bob: a classic bug (diagnosed) and one no table names (its hint is the help)
    trees["bob"] = {**correct, f"{A1}/layer_norm.py": _patch(correct[f"{A1}/layer_norm.py"], "unbiased=False",
                                                             "unbiased=True"),
                    f"{A1}/embedding.py": _patch(correct[f"{A1}/embedding.py"], "* math.sqrt(self.d_model)",
                                                 "* math.sqrt(self.d_model) + 1")}
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


def _readme_commands() -> tuple[list[str], list[str]]:
    """The two command blocks of the docs' nbgrader page, as written: the instructor's (run from DIR)
    and the students' (each in a folder of their own); comments and blank lines dropped."""
    section = (ROOT / "docs/how-to/nbgrader.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "the docs' nbgrader page has an instructor's and a students' block"
    instructor, students = ([line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
                            for block in blocks)
    return instructor, students


def _shell(line: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (line, proc.stdout[-3000:], proc.stderr[-5000:])
    return proc


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, quick_course):
    """The README's commands as written, once, on five students: ada through nbgrader's exchange,
    bob as an LMS archive, cyd, dan and eve handed in straight into submitted/. What each
    step left behind, and grade's own JSON per student (graded meanwhile, from copies)."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    # the course dir lies under the course's folder, so that `grade nbgrader .` finds course.toml
    # from it as the README says; students work outside both
    (tmp / "course.toml").write_text(quick_course.read_text())
    course = load_course(tmp / "course.toml")
    course_dir = tmp / "course"
    course_dir.mkdir()
    students_dir = tmp_path_factory.mktemp("students")
    canaries = {"kernel": tmp / "kernel-canary", "sandbox": tmp / "sandbox-canary"}
    # nbgrader's gradebook runs `alembic` and the README runs `grade` and `nbgrader`: the
    # environment's scripts first on PATH; and no personal Jupyter or IPython settings or kernels
    # of whoever runs the tests (the kernel is the environment's own python3)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"), "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"), "IPYTHONDIR": str(tmp / "ipython"),
           "NO_COLOR": "1", "TERM": "dumb"}
    student_env = {**env, "JUPYTER_CONFIG_DIR": str(students_dir / "config"),
                   "JUPYTER_DATA_DIR": str(students_dir / "data")}

    trees = _trees(course, canaries)
    for student in STUDENTS:
        _write(tmp / "direct" / student / A1, trees[student])
    archive = course_dir / "downloaded" / A1 / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "bob_attempt_2026-05-01.zip", "w") as z:
        for rel, text in trees["bob"].items():
            z.writestr(f"my-submission/{rel}", text)
        z.writestr("my-submission/notes.txt", "not collected")
        z.writestr(f"__MACOSX/my-submission/{A1}/layer_norm.py", "not collected either")

    instructor, students = _readme_commands()
    out: dict[str, str] = {}
    # grade's own reports of the same trees, graded meanwhile (it mostly waits on dan's hang)
    with ThreadPoolExecutor(max_workers=1) as pool:
        futures = {s: pool.submit(cli_json, tmp / "direct" / s / A1, A1, "--course", str(tmp / "course.toml"))
                   for s in STUDENTS}
        for line in instructor:
            words = line.split()
            if words[:2] == ["nbgrader", "collect"]:
                out["students"] = _student_steps(students, students_dir, student_env, out["setup"], trees["ada"])
            if words[:3] == ["grade", "nbgrader", "prepare"]:
                released = course_dir / "release" / A1 / f"{A1}.ipynb"
                for student in ("cyd", "dan", "eve"):
                    _write(course_dir / "submitted" / student / A1, trees[student])
                (course_dir / "submitted" / "eve" / A1 / f"{A1}.ipynb").write_text(
                    _hostile_notebook(released, canaries["kernel"]))
            proc = _shell(line, course_dir, env)
            if words[:2] == ["grade", "nbgrader"]:
                out["prepared" if words[2] == "prepare" else "setup"] = proc.stdout
        direct = {s: future.result() for s, future in futures.items()}
    ran = [" ".join(line.split()[:2]) for line in instructor]
    for step in ("nbgrader generate_assignment", "nbgrader release_assignment", "nbgrader collect",
                 "nbgrader zip_collect", "nbgrader autograde", "nbgrader generate_feedback"):
        assert step in ran, f"the README's nbgrader sequence lacks {step}"
    return {"course": course, "course_file": tmp / "course.toml", "dir": course_dir, "trees": trees,
            "canaries": canaries, "prepared": out["prepared"].split(), "direct": direct, "local": out["students"]}


def _student_steps(lines: list[str], students_dir: Path, env: dict, setup: str, tree: dict[str, str]) -> str:
    """ada's part of the README: her nbgrader config holds the settings `grade nbgrader` printed
    (and her name: one user of this machine plays her); the stubs she fetches become her tree
    before she grades and submits. What her own `grade` printed."""
    settings = [line.strip() for line in setup.splitlines() if line.strip().startswith("c.")]
    assert len(settings) == 2, setup
    config = students_dir / "config" / "nbgrader_config.py"
    config.parent.mkdir(parents=True)
    config.write_text("\n".join(["c = get_config()  # noqa: F821", *settings,
                                 "c.CourseDirectory.student_id = 'ada'", ""]))
    home = students_dir / "ada"
    home.mkdir()
    local = ""
    for line in lines:
        proc = _shell(line, home, env)
        if "fetch_assignment" in line:
            _write(home / A1, tree)
        if line.split()[-2:] == ["grade", A1]:
            local = proc.stdout
    assert local, "the README's students' block runs grade"
    return local


def test_release_holds_the_stubs_the_public_course_and_no_solution(pipeline):
    released = pipeline["dir"] / "release" / A1
    files = sorted(p.relative_to(released).as_posix() for p in released.rglob("*") if p.is_file())
    stubs = [f"{A1}/{name}" for name in ("__init__.py", *pipeline["course"].assignment(A1).files)]
    assert {f"{A1}.ipynb", "course.toml", *stubs} <= set(files)
    assert {f for f in files if not f.startswith("tests/")} == {f"{A1}.ipynb", "course.toml", *stubs}
    for rel in stubs:
        text = (released / rel).read_text()
        assert text == (ROOT / "assignments" / rel).read_text(), rel
        assert BEGIN not in text and END not in text, rel
        assert rel.endswith("__init__.py") or "NotImplementedError" in text, rel
    # a line of every solution body, e.g. LayerNorm's variance, is nowhere in the release
    assert "unbiased=False" not in (released / A1 / "layer_norm.py").read_text()
    # the public course is the public tier of this assignment only: no hidden check, no other assignment
    assert audit(released, pipeline["course"]) == []
    assert "tests/grading/public/test_assignment1.py" in files
    assert not [f for f in files if "assignment2" in f or "hidden" in f]
    public = load_course(released / "course.toml")
    assert list(public.assignments) == [A1]
    assert {chk.tier for comp in public.assignment(A1).components for chk in comp.checks} == {"public", "cuda"}


def test_students_grade_on_their_own(pipeline):
    """ada's `grade assignment1`, run as the README tells students, in the folder she fetched:
    her own files, graded with the public checks that came with it."""
    local = pipeline["local"]
    assert "All checks passed: 40 / 40." in local, local
    assert "Public checks only" in local, local
    nb = nbformat.read(str(pipeline["dir"] / "release" / A1 / f"{A1}.ipynb"), as_version=4)
    assert f"run `grade {A1}` in a terminal in this folder" in nb.cells[0].source


def test_collect_zip_collect_and_prepare_place_the_files_grade_reads(pipeline):
    for student in ("ada", "bob"):
        folder = pipeline["dir"] / "submitted" / student / A1
        for rel, text in pipeline["trees"][student].items():
            assert (folder / rel).read_text() == text
    # bob's archive: the course's .py files only; ada submitted the whole folder she fetched
    folder = pipeline["dir"] / "submitted" / "bob" / A1
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == sorted([*pipeline["trees"]["bob"], f"{A1}.ipynb"])
    assert (pipeline["dir"] / "submitted" / "ada" / A1 / "course.toml").is_file()
    assert pipeline["prepared"] == ["kept:", "ada", "supplied:", "bob", "replaced:", "cyd", "supplied:", "dan",
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


def _text(path: Path) -> str:
    """An HTML file's text as a reader sees it, whitespace runs as one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())).split())


def _said(value: object) -> str:
    first = str(value).splitlines()[0] if str(value).strip() else str(value)
    return " ".join(first.split())


def test_feedback_carries_the_public_detail_of_the_terminal_report(pipeline):
    """Each failing component's cell shows its diagnosis and a failed public check in full:
    message, expected, got, where, example, and the hint where no diagnosis names the bug."""
    shown = {"diagnosis": 0, "hint": 0, "expected": 0}
    for student in STUDENTS:
        text = _text(pipeline["dir"] / "feedback" / student / A1 / f"{A1}.html")
        for comp in pipeline["direct"][student]["components"]:
            failed = [t for t in comp["tests"] if not t["hidden"] and t["status"] != "passed"
                      and not t.get("excused_by") and t["reason"] not in ("unavailable", "no_cuda")]
            if not failed or comp["status"] == "not attempted":
                continue
            diagnosis = comp.get("diagnosis")
            if diagnosis:
                assert _said(diagnosis["message"]) in text, (student, comp["name"])
                shown["diagnosis"] += 1
            # a "looks like" (numerical forensics, grader/judging/diagnosis.py) names no bug of the table:
            # the hint stays
            forensic = bool(diagnosis) and diagnosis["kind"] == "looks_like"
            keys = ("expected", "got", "where", "example", *(("hint",) if not diagnosis or forensic else ()))

            def in_full(t, keys=keys, text=text):
                return (f"{t['id']}, in full:" in text and _said(t["message"]) in text
                        and all(_said(t[k]) in text for k in keys if t.get(k)))
            assert any(in_full(t) for t in failed), (student, comp["name"], [t["id"] for t in failed])
            full = next(t for t in failed if in_full(t))
            shown["hint"] += (not diagnosis or forensic) and bool(full.get("hint"))
            shown["expected"] += bool(full.get("expected")) and bool(full.get("got"))
    # bob's unbiased variance is a classic bug, named; his TokenEmbedding's scale only looks like one: a hint
    assert shown["diagnosis"] and shown["hint"] and shown["expected"], shown


def test_nothing_students_get_names_a_path_of_the_instructors(pipeline):
    """The released folder and the feedback name neither the course's folder (which holds the
    nbgrader course directory) nor the kit's nor the home folder."""
    private = {str(pipeline["course_file"].parent), str(ROOT)}
    if len(str(Path.home())) > 1:
        private.add(str(Path.home()))
    released = [p for p in (pipeline["dir"] / "release" / A1).rglob("*") if p.is_file()]
    feedback = list((pipeline["dir"] / "feedback").rglob("*.html"))
    assert released and len(feedback) == len(STUDENTS)
    for path in released + feedback:
        text = path.read_text(errors="replace")
        assert not [s for s in private if s in text], (path, [s for s in private if s in text])


def test_a_score_is_always_a_number_nbgrader_accepts():
    assert [cells.clamp(s, 10) for s in (7.456, 12, -1, float("nan"), float("inf"), "10", True, None)] == [
        7.46, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert cells.component(None, "LayerNorm", points=10) == 0.0


def test_bad_input_is_one_line(tmp_path):
    for args, named in [(("nbgrader", str(tmp_path / "c"), "--assignment", "assignment9"), "'assignment9'"),
                        (("nbgrader", "prepare", str(tmp_path), "--assignment", A1), "generate_assignment"),
                        (("nbgrader", str(tmp_path / "c"), "--timeout", "0"), "'0'"),
                        (("nbgrader", str(tmp_path / "c"), "--course-id", "my course"), "'my course'")]:
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
