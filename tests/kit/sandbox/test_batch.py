"""`grade batch`: a row for every submission whatever it does, the same grades as `grade`, resumable,
namespaces or an explicit risk (a real Dask cluster: tests/kit/sandbox/test_dask.py)."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kit.conftest import ROOT, SOLUTIONS, cli_json, cmdline, mutant, run_grade

LN_BUG = {"assignment1/layer_norm.py": [("unbiased=False", "unbiased=True")]}
CLASS = pytest.mark.xdist_group("batch_class")  # the tests that read the graded class (conftest.graded)


def hidden_ids() -> set[str]:
    import tomllib

    data = tomllib.loads((ROOT / "course.toml").read_text())
    return {check for name, a in data.items() if name.startswith("assignment")
            for c in a.values() if isinstance(c, dict) for check in c.get("hidden", [])}


def components(assignment: str) -> list[str]:
    """The assignment's components in course.toml's order (a component added there is in every list)."""
    from grader.course import load

    return [c.name for c in load(ROOT / "course.toml").assignment(assignment).components]


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def batch(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_grade("batch", *args, cwd=cwd) if env is None else subprocess.run(
        [sys.executable, "-m", "grader", "batch", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_COLOR": "1", "TERM": "dumb", **env})


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    with open(path) as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def start_batch(*args: str, new_session: bool = False) -> subprocess.Popen:
    """`grade batch ARGS` in the background with SIGINT handled as in a terminal, whatever this process
    was started with (a shell's background job starts with it ignored, and a batch keeps it so)."""
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv[0] = 'grade'; runpy.run_module('grader', run_name='__main__')")
    return subprocess.Popen([sys.executable, "-c", start, "batch", *args], cwd=ROOT,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=new_session)


def wait_for_reports(out: Path, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while len(list((out / "reports").glob("*.json"))) < n and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)


def children(pid: int) -> list[str]:
    """The processes whose parent is `pid`."""
    found = []
    for child in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{child}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(child)
    return found


def reports_by_student(out: Path) -> dict[str, dict]:
    reports = [json.loads(p.read_text()) for p in (out / "reports").glob("*.json")]
    return {r["batch"]["student"]: r for r in reports}


@CLASS
def test_every_submission_gets_a_row_whatever_it_does(graded, class_dir):
    out, _ = graded
    rows = read_csv(out / "grades.csv")
    students = {p.stem if p.suffix == ".zip" else p.name for p in class_dir.iterdir()}
    assert set(rows) == students
    assert list(rows["correct"]) == ["student", *components("assignment1"), "total", "status", "lms_id", "overrides",
                                     "isolation", "student_id", "late", "late_penalty", "held"]
    assert rows["correct"]["isolation"] == reports_by_student(out)["correct"]["isolation"] != ""
    for student in ("correct", "zipped", "flat_files"):
        assert (rows[student]["total"], rows[student]["status"]) == ("40", "graded"), rows[student]
    assert rows["empty"]["status"] == "empty" and rows["empty"]["total"] == "0"
    assert rows["bad_zip"]["status"] == "unreadable" and rows["bad_zip"]["total"] == "0"
    assert rows["hangs_ignoring_signals"]["status"] == "fault"
    # points earned before a fault are kept: the other components of the hostile trees keep theirs
    assert rows["hangs_ignoring_signals"]["LayerNorm"] == "10"
    assert rows["allocates_a_terabyte"]["LayerNorm"] == "10"
    assert rows["forks_hundreds_of_sleepers"]["PositionwiseFeedForward"] == "8"
    assert rows["floods_its_output"]["PositionalEncoding"] == "10"
    assert float(rows["syntax_error"]["PositionwiseFeedForward"]) == 0 < float(rows["syntax_error"]["total"])
    assert 0 < float(rows["partial"]["LayerNorm"]) < 10


@CLASS
def test_batch_grades_equal_grade_s_own(graded, class_dir, quick_course):
    out, _ = graded
    for student in ("partial", "hangs_ignoring_signals"):
        direct = cli_json(class_dir / student, "assignment1", "--course", str(quick_course))
        report = json.loads((out / "reports" / f"{student}.json").read_text())
        assert report["score"] == direct["score"]
        assert [(c["name"], c["score"]) for c in report["components"]] == \
               [(c["name"], c["score"]) for c in direct["components"]]
        assert {t["id"]: t["status"] for c in report["components"] for t in c["tests"]} == \
               {t["id"]: t["status"] for c in direct["components"] for t in c["tests"]}


@CLASS
def test_reports_gradescope_and_feedback_are_written_for_each_student(graded):
    out, _ = graded
    hidden = hidden_ids()
    for report_path in (out / "reports").glob("*.json"):
        report = json.loads(report_path.read_text())
        assert {"assignment", "submission", "score", "max_score", "components"} <= set(report)
        results = json.loads((out / "gradescope" / report_path.stem / "results.json").read_text())
        assert results["score"] == report["score"]
        assert sum(t["score"] for t in results["tests"]) == pytest.approx(report["score"], abs=0.05)
        assert not any(h in t["output"] for t in results["tests"] for h in hidden)
        if report["batch"]["status"] in ("graded", "fault"):
            text = (out / "feedback" / f"{report_path.stem}.txt").read_text()
            assert f"{report['score']:g} / 40" in text
            assert not [h for h in hidden if h in text], "feedback shows a hidden check"
            assert max(map(len, text.splitlines())) <= 80


@CLASS
def test_the_class_summary_is_printed_and_written(graded):
    out, proc = graded
    summary = json.loads((out / "summary.json").read_text())
    assert summary["students"] == 12
    assert sum(b["students"] for b in summary["histogram"]) == 12
    assert summary["statuses"]["empty"] == 1 and summary["statuses"]["unreadable"] == 1
    assert [c["name"] for c in summary["components"]][0] == "LayerNorm"
    assert summary["most_failed"] and all(c["students"] >= 1 and c["typical"] for c in summary["most_failed"][:1])
    text = (out / "summary.txt").read_text()
    assert "class summary" in text and "Checks most students fail" in text and "class summary" in proc.stdout
    assert max(map(len, text.splitlines())) <= 80
    # each check id whole on one line (the box once broke them mid-word)
    assert all(re.search(rf"\b{c['id']}\b", text) for c in summary["most_failed"]), text
    # the partial student's LayerNorm is the table's unbiased variance: the summary counts it by name
    assert {(d["component"], d["bug"], d["students"]) for d in summary["diagnoses"]} >= {
        ("LayerNorm", "layer_norm_unbiased_variance", 1)}, summary["diagnoses"]
    assert "Classic bugs named in the reports" in text
    # the LayerNorm that forks is flagged: held for review (the default policy), listed with its line
    assert [(h["student"], h["component"]) for h in summary["held"]] == [("forks_hundreds_of_sleepers", "LayerNorm")]
    assert {f["what"] for f in summary["held"][0]["lines"]} == {"os.fork"} and "Held for review" in text, text
    # grades.csv says so too: the 0 in LayerNorm's column is held, with what it earned; no one else is held
    held = {student: row["held"] for student, row in read_csv(out / "grades.csv").items() if row["held"]}
    assert held == {"forks_hundreds_of_sleepers": f"LayerNorm={summary['held'][0]['points']:g}"}, held
    assert read_csv(out / "grades.csv")["forks_hundreds_of_sleepers"]["LayerNorm"] == "0"
    # the tier the submissions ran in, and what it kept from them
    tiers = {t["tier"]: t["students"] for t in summary["isolation"]}
    assert sum(tiers.values()) >= 10 and all(f"isolation: {tier}" in text for tier in tiers), (tiers, text)
    results = json.loads((out / "gradescope" / "partial" / "results.json").read_text())
    norm = next(t for t in results["tests"] if t["name"] == "LayerNorm")
    assert norm["output"].startswith("Diagnosis: matches LayerNorm with the unbiased variance"), norm


def test_a_stop_that_lost_its_interrupt_still_ends_the_batch_after_one_submission(tmp_path):
    # Python drops a KeyboardInterrupt raised inside a finalizer; the SIGINT handler of `grade batch`
    # also sets `stop`, which the batch checks after each submission it finishes
    import threading

    from grader import load_course
    from grader.batch import run

    root = tmp_path / "class"
    for i in range(3):
        copy_tree(SOLUTIONS, root / f"student{i}")
    stop = threading.Event()
    stop.set()
    with pytest.raises(KeyboardInterrupt):
        run.run_batch(course=load_course(ROOT / "course.toml"), assignment="assignment1", root=root,
                      out=tmp_path / "out", options=run.Options(unsafe_process_isolation=True, stop=stop))
    assert [p.name for p in (tmp_path / "out" / "reports").glob("*.json")] == ["student0.json"]
    assert list(read_csv(tmp_path / "out" / "grades.csv")) == ["student0"]


def slow_class(root: Path, n: int) -> Path:
    """`n` correct students; the last is slow to import and graded last, so that a batch cannot end
    before a signal sent once the others are graded reaches it."""
    for i in range(n):
        copy_tree(SOLUTIONS, root / f"student{i}")
    slow = root / f"student{n - 1}" / "assignment1" / "layer_norm.py"
    slow.write_text("import time\ntime.sleep(8)\n" + slow.read_text())
    return root


def test_an_interrupted_batch_resumes_without_regrading(tmp_path):
    root = slow_class(tmp_path / "class", 4)
    out = tmp_path / "out"
    proc = start_batch(str(root), "--assignment", "assignment1", "--out", str(out))
    wait_for_reports(out, 1, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout + stderr)[-3000:]
    assert "run the same command again" in " ".join((stdout + stderr).split()) and "Traceback" not in stdout + stderr
    done = {p.name: p.stat().st_mtime_ns for p in (out / "reports").glob("*.json")}
    assert 1 <= len(done) < 4
    assert len(read_csv(out / "grades.csv")) == len(done)  # what was graded is in the CSV already

    again = batch(str(root), "--assignment", "assignment1", "--out", str(out))
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{4 - len(done)} graded, {len(done)} unchanged" in " ".join(again.stdout.split())
    assert {p.name: p.stat().st_mtime_ns for p in (out / "reports").glob("*.json") if p.name in done} == done
    assert {r["total"] for r in read_csv(out / "grades.csv").values()} == {"40"}

    (root / "student0" / "assignment1" / "layer_norm.py").write_text("raise SystemExit\n")  # a changed submission
    third = batch(str(root), "--assignment", "assignment1", "--out", str(out))
    assert "1 graded, 3 unchanged" in " ".join(third.stdout.split())
    assert read_csv(out / "grades.csv")["student0"]["LayerNorm"] == "0"


def test_nbgraders_submitted_layout_is_understood(tmp_path):
    tree = tmp_path / "course" / "submitted" / "ada" / "assignment1"
    copy_tree(SOLUTIONS / "assignment1", tree / "assignment1")
    proc = batch(str(tmp_path / "course"), "--assignment", "assignment1", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_csv(tmp_path / "out" / "grades.csv")["ada"]["total"] == "40"


def test_a_batch_without_namespaces_needs_the_risk_named(tmp_path):
    copy_tree(SOLUTIONS, tmp_path / "class" / "ada")
    args = (str(tmp_path / "class"), "--assignment", "assignment1", "--out", str(tmp_path / "out"))
    refused = batch(*args, env={"GRADER_ISOLATION": "process"})
    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1 and "--unsafe-process-isolation" in refused.stderr
    assert not (tmp_path / "out").exists()
    allowed = batch(*args, "--unsafe-process-isolation", env={"GRADER_ISOLATION": "process"})
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "reports" / "ada.json").read_text())["isolation"] == "process"


@pytest.mark.parametrize("args, bad", [
    (["--jobs", "0"], "'0'"), (["--assignment", "assignment9"], "assignment9"), ([], "nowhere"),
    (["--similarity", "0"], "'0'"), (["--similarity", "150"], "'150'"), (["--similarity", "most"], "'most'"),
])
def test_bad_batch_arguments_get_one_line_and_status_2(tmp_path, args, bad):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    folder = str(tmp_path / "nowhere") if not args else str(tmp_path / "class")
    base = ["--assignment", "assignment1"] if "--assignment" not in args else []
    proc = batch(folder, *base, *args, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and bad in proc.stderr and "Traceback" not in proc.stderr


def test_a_batch_that_could_grade_nothing_for_its_own_errors_exits_1(tmp_path, quick_course):
    """Every grading fails for the grader's own reason, here a syntax error in the hidden suite (an
    instructor's typo in a copy of the suites): pytest cannot collect it, so each worker's grading
    raises RuntimeError ("the grading suites did not run") and every row is grader_error. Such a
    batch must not end as a success whose last line says "2 graded"."""
    suites = copy_tree(ROOT / "tests" / "grading", tmp_path / "suites")
    hidden = suites / "hidden" / "test_assignment1.py"
    hidden.write_text(hidden.read_text() + "\ndef test_typo(:\n")
    course = tmp_path / "course.toml"
    course.write_text(re.sub(r'^suites = "[^"]+"', f'suites = "{suites}"', quick_course.read_text(), flags=re.M))
    for name in ("ada", "bob"):
        copy_tree(SOLUTIONS, tmp_path / "class" / name)
    proc = batch(str(tmp_path / "class"), "--assignment", "assignment1", "--out", str(tmp_path / "out"),
                 "--course", str(course))
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert {r["status"] for r in read_csv(tmp_path / "out" / "grades.csv").values()} == {"grader_error"}
    [line] = proc.stderr.strip().splitlines()
    assert "0 graded" in line and "2 failed" in line and "suite" in line
    assert len(line) < 400


def test_grader_errors_are_counted_in_the_last_line(tmp_path, monkeypatch, capsys):
    """Some graded, some grader_error: the batch exits 0, and its last line says how many failed.
    The grader's failure is faked (grader.batch.pool.grade_locally returns an error for one student): a
    real grader error that strikes one submission of a class and not the others has no trigger."""
    from grader.batch import outputs, pool
    from grader.commands import batch as command
    from grader.course import load

    spec = load(ROOT / "course.toml").assignment("assignment1")

    def fake(course, assignment, entries, jobs):
        for e in entries:
            if e.student == "bob":
                yield e, {"error": "the grader failed on this submission: RuntimeError: boom"}
            else:
                yield e, {"report": outputs.empty_report(spec, str(e.tree), "passed", ""), "feedback": "fine"}

    monkeypatch.setattr(pool, "grade_locally", fake)
    for name in ("ada", "bob", "cy"):
        copy_tree(SOLUTIONS, tmp_path / "class" / name)
    args = [str(tmp_path / "class"), "--assignment", "assignment1", "--out", str(tmp_path / "out"),
            "--course", str(ROOT / "course.toml"), "--unsafe-process-isolation"]
    assert command.main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 graded, 1 failed with a grader error" in out, out[-1000:]
    assert read_csv(tmp_path / "out" / "grades.csv")["bob"]["status"] == "grader_error"

    monkeypatch.setattr(pool, "grade_locally", lambda course, assignment, entries, jobs: (
        (e, {"error": "the grader failed on this submission: RuntimeError: boom"}) for e in entries))
    assert command.main(args) == 1  # bob alone is graded again (grader_error is retried), and fails again
    out, err = capsys.readouterr()
    assert "0 graded, 1 failed" in err and "boom" in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_in_a_terminal_prints_one_line_and_no_traceback(tmp_path):
    """A terminal sends Ctrl-C's SIGINT to the whole foreground process group: the batch and its pool's
    workers. With --jobs 2 and the last submission slow, one worker is idle when it comes."""
    root = slow_class(tmp_path / "class", 3)
    out = tmp_path / "out"
    proc = start_batch(str(root), "--assignment", "assignment1", "--out", str(out), "--jobs", "2", new_session=True)
    wait_for_reports(out, 2, proc)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout + stderr)[-3000:]
    assert "Traceback" not in stdout + stderr and "KeyboardInterrupt" not in stdout + stderr, stderr[-3000:]
    assert (stdout + stderr).count("Interrupted") == 1
    assert len(read_csv(out / "grades.csv")) == 2


def test_ctrl_c_while_the_pool_starts_prints_no_traceback(tmp_path):
    """Ctrl-C as soon as the pool's workers exist, while they start (Python's own start, then the
    initializer's imports): no worker may print a KeyboardInterrupt traceback."""
    for i in range(2):
        copy_tree(SOLUTIONS, tmp_path / "class" / f"student{i}")
    proc = start_batch(str(tmp_path / "class"), "--assignment", "assignment1", "--out", str(tmp_path / "out"),
                       "--jobs", "2", new_session=True)
    deadline = time.monotonic() + 120
    while not any(b"spawn_main" in cmdline(pid) for pid in children(proc.pid)) and \
            time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(0.5)  # Python has started in them (until it has, SIGINT ends a process without a word)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout + stderr)[-3000:]
    assert "Traceback" not in stdout + stderr and "KeyboardInterrupt" not in stdout + stderr, stderr[-3000:]


def test_symlinks_in_a_submission_are_refused_not_followed(tmp_path, quick_course):
    """A submission is the student's own files: a symbolic link (to a classmate's file, to the kit's
    solutions, as the assignment's folder or as the student's folder) gets a `refused` row and 0."""
    root = tmp_path / "class"
    copy_tree(SOLUTIONS, root / "ada")
    (root / "bob").mkdir()
    (root / "copycat").mkdir()
    (root / "solver").mkdir()
    for path in (SOLUTIONS / "assignment1").glob("*.py"):
        shutil.copy(path, root / "bob" / path.name)
        (root / "copycat" / path.name).symlink_to(Path("..") / "bob" / path.name)
        (root / "solver" / path.name).symlink_to(path)
    (root / "linked_folder").mkdir()
    (root / "linked_folder" / "assignment1").symlink_to(SOLUTIONS / "assignment1")
    one_file = copy_tree(SOLUTIONS, root / "one_file")
    (one_file / "assignment1" / "embedding.py").unlink()
    (one_file / "assignment1" / "embedding.py").symlink_to(root / "ada" / "assignment1" / "embedding.py")
    (root / "linked_student").symlink_to(root / "ada")
    out = tmp_path / "out"
    proc = batch(str(root), "--assignment", "assignment1", "--jobs", "2", "--out", str(out),
                 "--course", str(quick_course))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    rows = read_csv(out / "grades.csv")
    refused = ("copycat", "solver", "linked_folder", "one_file", "linked_student")
    assert {s: (rows[s]["status"], rows[s]["total"]) for s in rows} == {
        "ada": ("graded", "40"), "bob": ("graded", "40"), **{s: ("refused", "0") for s in refused}}
    reports = reports_by_student(out)
    assert reports["copycat"]["batch"]["message"] == (
        "layer_norm.py is a symbolic link (to ../bob/layer_norm.py); submissions must be regular files and "
        "folders, not links")
    assert f"(to {SOLUTIONS / 'assignment1' / 'layer_norm.py'})" in reports["solver"]["batch"]["message"]
    assert reports["linked_folder"]["batch"]["message"].startswith("assignment1 is a symbolic link")
    assert reports["one_file"]["batch"]["message"].startswith("assignment1/embedding.py is a symbolic link")
    assert reports["linked_student"]["batch"]["message"].startswith("linked_student is a symbolic link")
    assert json.loads((out / "summary.json").read_text())["statuses"]["refused"] == len(refused)
    assert "refused 5" in " ".join(proc.stdout.split())


def test_students_whose_names_sanitise_alike_keep_their_own_files(tmp_path, quick_course):
    """`ivy x` and `ivy_x` are two students whose names make the same file name once sanitised: each
    keeps its own report, Gradescope results and feedback, and a second run grades neither again."""
    root = tmp_path / "class"
    copy_tree(SOLUTIONS, root / "ivy x")
    copy_tree(mutant(tmp_path / "p", LN_BUG), root / "ivy_x")
    out = tmp_path / "out"
    args = (str(root), "--assignment", "assignment1", "--out", str(out), "--course", str(quick_course))
    first = batch(*args)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    rows = read_csv(out / "grades.csv")
    assert rows["ivy x"]["total"] == "40" and float(rows["ivy_x"]["total"]) < 40
    reports = reports_by_student(out)
    assert set(reports) == {"ivy x", "ivy_x"}
    for path in (out / "reports").glob("*.json"):
        report = json.loads(path.read_text())
        assert f"{report['score']:g}" == rows[report["batch"]["student"]]["total"]
        assert json.loads((out / "gradescope" / path.stem / "results.json").read_text())["score"] == report["score"]
        assert f"{report['score']:g} / 40" in (out / "feedback" / f"{path.stem}.txt").read_text()
    done = {p.name: p.stat().st_mtime_ns for p in (out / "reports").glob("*.json")}
    again = batch(*args)
    assert "0 graded, 2 unchanged" in " ".join(again.stdout.split()), again.stdout[-2000:]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "reports").glob("*.json")} == done
