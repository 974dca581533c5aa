"""Shared steps of the kit's own tests: grade a tree through the warm grader, or the real command line."""

import atexit
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[2]
# no deadline for the kit's own properties: a timing threshold fails on a loaded machine (an example took
# 264 ms against Hypothesis's default 200 ms in a container's unit tier), and the kit measures speed in
# benchmarks/, not in tests
settings.register_profile("kit", deadline=None)
settings.load_profile("kit")
SOLUTIONS = ROOT / "solutions"


def run_grade(*args: str, cwd: Path = ROOT, timeout: float = 600,
              refuse_namespaces: bool = False) -> subprocess.CompletedProcess:
    """`python -m grader ARGS` as a user runs it: a fresh process, no colour, plain terminal;
    `refuse_namespaces`: in a process that the kernel refuses namespaces, as Docker's default
    seccomp profile does (tests/kit/seccomp.py)."""
    from tests.kit import seccomp

    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=seccomp.refuse_namespaces if refuse_namespaces else None)


def cli_json(tree: Path, assignment: str, *extra: str) -> dict:
    """Grade `tree` with `grade ... --json -` and return the JSON report; the command must exit 0
    without a traceback."""
    proc = run_grade(assignment, "--submission", str(tree), "--json", "-", *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout)


_GRADERS: dict = {}
ONE_SCREEN = 45  # lines of `grade`'s report at 100 columns, for a submission with one bug
# Reports already graded, by what decides them (tests/kit/sandbox/test_reproducible.py: the same files, course
# and device always get the same JSON): many tests grade the same tree (a bug of the table alone, in
# test_assignmentN and test_attribution; the solutions). KIT_CACHE keeps them across runs, keyed on the
# tree and on everything besides it that decides a grade (the grader's code, the suites, the reference,
# course.toml: grader.batch.regrade.course_digests; the versions of Python, torch, numpy and
# Hypothesis; the GRADER_* variables, such as the isolation asked for; the user), so that any change
# of those grades afresh. A report with a check that timed out, crashed or met the grader's own
# trouble may depend on the machine's load: it is kept for this run only, in REPORT_CACHE (set by the
# `report_cache` fixture; None: this process only). Both folders are shared by the run's xdist
# workers: one grades a tree, the others wait for it.
KIT_CACHE = ROOT / ".kit-cache" / "reports"  # gitignored; `rm -rf .kit-cache` grades everything afresh
KIT_CACHE_DAYS = 14  # an entry not read for this long is removed
REPORT_CACHE: Path | None = None
_REPORTS: dict = {}
_UNSTEADY = {"timeout", "crash", "grader"}  # outcome reasons (and statuses) that the machine may decide


def grade_report(tree: Path, assignment: str, *, course: Path = ROOT / "course.toml", device: str = "cpu",
                 cached: bool = True):
    """Grade `tree` in this process through the warm grader that `grade`, `grade --watch` and `grade
    batch` use (grader.grading.warm.Grader: a worker forked per grade from a template, in the same isolation);
    one grader per course and test process. tests/kit/sandbox/test_reproducible.py holds its JSON to the
    command line's. `cached`: a tree with the same files, graded earlier (in this run or, unless the
    report is unsteady, in an earlier one: KIT_CACHE) for the same assignment, course and device with
    the same sources, gives that grading's report (timings included) without a new one."""
    if not cached:
        return _grade_now(tree, assignment, course, device)
    key = report_key(tree, assignment, course, device)
    if key not in _REPORTS:
        _REPORTS[key] = _cached(key, tree, assignment, course, device)
    # the key is the tree's files, not its folder: a report graded from a copy names the folder asked for
    return dataclasses.replace(_REPORTS[key], submission=Path(tree).resolve())


def _cached(key: str, tree: Path, assignment: str, course: Path, device: str):
    if REPORT_CACHE is None:
        return _grade_now(tree, assignment, course, device)
    import fcntl

    KIT_CACHE.mkdir(parents=True, exist_ok=True)
    with open(KIT_CACHE / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker (or run) grading the same tree: wait for its report
        report = _stored(KIT_CACHE / f"{key}.pickle") or _stored(REPORT_CACHE / f"{key}.pickle")
        if report is None:
            report = _grade_now(tree, assignment, course, device)
            _store((KIT_CACHE if steady(report) else REPORT_CACHE) / f"{key}.pickle", report)
    return report


def _stored(path: Path):
    """The report pickled at `path` (its time of use renewed), or None."""
    import pickle

    try:
        report = pickle.loads(path.read_bytes())
        os.utime(path)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    return report


def _store(path: Path, report) -> None:
    import pickle

    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_bytes(pickle.dumps(report))
    part.rename(path)


def steady(report) -> bool:
    """No check timed out, crashed or met the grader's own trouble: nothing the machine's load decided."""
    return not any({t.outcome.status, t.outcome.reason} & _UNSTEADY for c in report.components for t in c.checks)


def report_key(tree: Path, assignment: str, course: Path, device: str) -> str:
    import hashlib

    h = hashlib.sha256(f"{assignment}\0{device}\0{_sources_key(Path(course).resolve())}\0".encode())
    for path in sorted(p for p in Path(tree).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(f"\0{path.relative_to(tree).as_posix()}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()


_SOURCES: dict[Path, str] = {}


def _sources_key(course: Path) -> str:
    """A digest of everything besides the tree that decides a grade, read once per test process."""
    if course not in _SOURCES:
        import hashlib
        import platform

        import hypothesis
        import numpy
        import torch

        from grader import load_course
        from grader.batch.regrade import course_digests

        digests = course_digests(load_course(course))
        knobs = sorted((k, v) for k, v in os.environ.items() if k.startswith("GRADER_"))  # GRADER_ISOLATION, ...
        where = [platform.python_version(), torch.__version__, numpy.__version__, hypothesis.__version__,
                 knobs, os.geteuid()]
        _SOURCES[course] = hashlib.sha256(json.dumps([digests, where], sort_keys=True).encode()).hexdigest()
    return _SOURCES[course]


def _grade_now(tree: Path, assignment: str, course: Path, device: str):
    from grader import load_course
    from grader.grading.warm import Grader

    key = Path(course).resolve()
    if key not in _GRADERS:
        _GRADERS[key] = Grader(load_course(key)).start()
        atexit.register(_GRADERS[key].close)
    grader = _GRADERS[key]
    return grader.grade(assignment=grader.course.assignment(assignment), submission=tree, device=device)


def pytest_configure(config):
    from tests.kit.tiering import TIERS

    _matplotlib_font_cache()

    for name, what in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    config.addinivalue_line("markers", "needs(what): the test needs root, chromium, docker or git: skipped where it is "
                            "missing, saying how to get it; failed instead under CI (tests/kit/needs.py)")


def _matplotlib_font_cache() -> None:
    """matplotlib's font cache, built here where it is not yet: on a fresh machine the first import of
    matplotlib.pyplot runs `fc-list` to build it, and a unit test that imports it (copydetect does) would
    then start a process (tiering.guard). Seen in a fresh clone's unit tier
    (tests/kit/container/test_readme_fresh.py)."""
    try:
        import matplotlib.font_manager  # noqa: F401
    except ImportError:
        pass  # the kit without its "plots" extra: nothing imports it


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item):
    from tests.kit import needs

    for mark in item.iter_markers("needs"):
        needs.require(*mark.args)


_TIER_READER: list = []  # the one tiering.Reader of this collection (it reads each helper once)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """Each test's tier is the directory it lives in (tests/kit/unit/, sandbox/, ...: tests/kit/tiering.py):
    its markers, before `-m` selects by them. A test that reaches a tier its directory does not allow, a test
    module outside the tier directories, or a tier marker written on a test makes its module's collection
    fail, naming the test and the directory it belongs in."""
    report = yield
    if report.outcome != "passed":
        return report
    from tests.kit import tiering

    if not _TIER_READER:
        _TIER_READER.append(tiering.Reader())
    wrong = []
    for item in report.result:
        if not isinstance(item, pytest.Item):
            continue
        written = sorted({m.name for m in item.iter_markers() if m.name in tiering.TIERS})
        if written:
            wrong.append(f"{item.nodeid}: the tier marker {', '.join(written)} is written on it; its directory "
                         "says its tier (tests/kit/tiering.py)")
            continue
        where, tiers = tiering.directory(item.path), tiering.reached(item, _TIER_READER[0])
        problem = tiering.misplaced(item.nodeid, where, tiers)
        if problem is not None:
            wrong.append(problem)
            continue
        for tier in sorted(tiering.markers(where, tiers)):
            item.add_marker(getattr(pytest.mark, tier))
    if wrong:
        report.outcome, report.longrepr, report.result = "failed", "\n".join(wrong), []
    return report


@pytest.fixture(autouse=True)
def _unit_tier_guard(request, monkeypatch):
    """A test of tests/kit/unit/ that starts a process fails, saying so (tiering.guard)."""
    if request.node.get_closest_marker("unit") is not None:
        from tests.kit.tiering import guard

        guard(monkeypatch)
    yield


@pytest.fixture(scope="session", autouse=True)
def report_cache(tmp_path_factory, worker_id):
    """The folder REPORT_CACHE, shared by this run's xdist workers (the parent of their base temp); the
    first worker also removes KIT_CACHE's entries that no run has read for KIT_CACHE_DAYS."""
    import time

    global REPORT_CACHE
    base = tmp_path_factory.getbasetemp()
    REPORT_CACHE = (base if worker_id == "master" else base.parent) / "reports"
    REPORT_CACHE.mkdir(exist_ok=True)
    if worker_id in ("master", "gw0") and KIT_CACHE.is_dir():
        old = time.time() - KIT_CACHE_DAYS * 86400
        for path in KIT_CACHE.iterdir():
            try:
                if path.stat().st_mtime < old:
                    path.unlink()
            except OSError:
                pass  # another run's, gone already
    yield REPORT_CACHE
    REPORT_CACHE = None


def as_json(report) -> dict:
    """The JSON report as `grade --json` writes it."""
    from grader.results import to_json

    return json.loads(json.dumps(to_json(report)))


def grade_json(tree: Path, assignment: str, *, course: Path = ROOT / "course.toml", device: str = "cpu",
               cached: bool = True) -> dict:
    """grade_report's JSON."""
    return as_json(grade_report(tree, assignment, course=course, device=device, cached=cached))


def grade_one_bug(tmp_path: Path, name: str) -> dict:
    """Grade solutions/ with the course's classic bug `name` (tests/grading/bugs.py) alone: it costs
    points in its own component only, the report fits one screen, and the diagnosis names it on
    that component and on no other (or on none, where the table says why it cannot be told)."""
    from tests.grading.bugs import BUGS

    bug = BUGS[name]
    result = grade_report(mutant(tmp_path, bug.patches), bug.assignment)
    report = as_json(result)
    assert_loses_only_in(report, bug.component)
    assert len(report_lines(result)) <= ONE_SCREEN, "\n".join(report_lines(result))
    named = {c["name"]: c["diagnosis"]["bug"] for c in report["components"] if c["diagnosis"]}
    wanted = {} if bug.undiagnosed else {bug.component: name}
    assert named == wanted, f"diagnosed {named}, expected {wanted} (stale? run grade expected)"
    # the numerical forensics alone, as for a bug outside the table, may name this component, never another
    from grader import load_course
    from grader.judging import diagnosis

    course = load_course(ROOT / "course.toml")
    results = {t.id: t.outcome for c in result.components for t in c.checks}
    waits = frozenset(t.id for c in result.components for t in c.checks if t.excused_by or t.waiting_on)
    # the one bug is in the assignment graded: the parts of earlier ones are the reference's (none upstream)
    alone = diagnosis.diagnose(course, course.assignment(bug.assignment), results, waits, table={},
                               upstream=frozenset())
    assert set(alone) <= {bug.component}, f"forensics said {alone} of a bug in {bug.component}"
    return report


def report_lines(report, width: int = 100) -> list[str]:
    """The terminal report as `grade` prints it at `width` columns, without colour."""
    import io

    from rich.console import Console

    from grader.render import report as render

    out = io.StringIO()
    render.render(report, Console(file=out, width=width, no_color=True, force_terminal=False))
    return out.getvalue().splitlines()


def scores(report: dict) -> dict[str, float]:
    return {c["name"]: c["score"] for c in report["components"]}


def earned(report: dict) -> dict[str, float]:
    """What each component's checks earned: its score, or for one held at 0 for review (a flag, under the
    default `[policy] flagged = "hold"`) the points held, which only an override releases."""
    return {c["name"]: c["score"] if c.get("held") is None else c["held"] for c in report["components"]}


def held(report: dict) -> set[str]:
    """The components held at 0 for review."""
    return {c["name"] for c in report["components"] if c.get("held") is not None and c["score"] == 0}


def full_marks(report: dict) -> dict[str, float]:
    return {c["name"]: c["max_score"] for c in report["components"]}


def mutant(tmp_path: Path, patches: dict[str, list[tuple[str, str]]], base: Path = SOLUTIONS) -> Path:
    """A copy of `base` with textual patches: {"assignment1/layer_norm.py": [(old, new), ...]}.

    Each `old` must occur exactly once, so a patch that no longer applies fails loudly
    instead of silently grading the unmodified solution."""
    tree = tmp_path / "submission"
    shutil.copytree(base, tree, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, edits in patches.items():
        path = tree / rel
        text = path.read_text()
        for old, new in edits:
            assert text.count(old) == 1, f"patch for {rel} does not apply: {old!r} occurs {text.count(old)} times"
            text = text.replace(old, new)
        path.write_text(text)
    return tree


def assert_loses_only_in(report: dict, component: str):
    """The bug costs points in `component` and nowhere else."""
    got, full = scores(report), full_marks(report)
    assert got[component] < full[component], f"{component} kept full marks: {got}"
    others = {n: s for n, s in got.items() if n != component and s != full[n]}
    failed = [f"{t['id']}: {t['status']}: {(t.get('message') or '')[:200]}" for c in report["components"]
              if c["name"] in others for t in c["tests"] if t["status"] not in ("passed", "excused")]
    assert not others, f"points lost outside {component}: {others} (full: {full}); failed: {failed}"


@pytest.fixture(scope="session")
def solution_reports() -> dict:
    """Reports of the reference solutions, graded once per assignment for the whole session."""
    cache: dict[str, dict] = {}

    def get(assignment: str) -> dict:
        if assignment not in cache:
            cache[assignment] = grade_json(SOLUTIONS, assignment)
        return cache[assignment]

    return get


@pytest.fixture(scope="session")
def quick_course(tmp_path_factory) -> Path:
    """The kit's course with a 3 s request timeout, so that hanging submissions are cheap to test."""
    text = (ROOT / "course.toml").read_text()
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    text = re.sub(r"^timeout_seconds = \d+", "timeout_seconds = 3", text, flags=re.M)
    path = tmp_path_factory.mktemp("course") / "course.toml"
    path.write_text(text)
    return path


def cmdline(pid: str) -> bytes:
    """/proc/<pid>/cmdline, or nothing for a process that is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# a student whose name and printed output are markup: the HTML pages must show them as text
HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_OUTPUT = '</pre><script>alert("pwned")</script>'


@pytest.fixture(scope="session")
def class_dir(tmp_path_factory) -> Path:
    """A class of assignment1 submissions that do everything a class does (graded once: `graded`;
    the tests that read it are in xdist_group "batch_class", so that one worker grades it)."""
    import zipfile

    from tests.kit.attacks import ATTACKS, build

    root = tmp_path_factory.mktemp("class")
    work = tmp_path_factory.mktemp("trees")

    def copy(src: Path, dst: Path) -> Path:
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        return dst

    copy(SOLUTIONS, root / "correct")
    copy(mutant(work / "p", {"assignment1/layer_norm.py": [("unbiased=False", "unbiased=True")]}), root / "partial")
    copy(mutant(work / "h", {"assignment1/feed_forward.py": [
        ("h = F.relu(self.linear1(x))", f"print({HOSTILE_OUTPUT!r})\n        h = self.linear1(x)")]}), root / HOSTILE)
    broken = copy(SOLUTIONS, root / "syntax_error")
    (broken / "assignment1" / "feed_forward.py").write_text("def forward(:\n")
    for name in ("hangs_ignoring_signals", "forks_hundreds_of_sleepers", "allocates_a_terabyte",
                 "floods_its_output"):
        copy(build(work / name, ATTACKS[name]), root / name)
    (root / "empty").mkdir()
    (root / "bad_zip.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    with zipfile.ZipFile(root / "zipped.zip", "w") as z:  # wrapped in a folder, as LMS downloads are
        for path in (SOLUTIONS / "assignment1").glob("*.py"):
            z.write(path, f"zipped/assignment1/{path.name}")
    flat = root / "flat_files"
    flat.mkdir()
    for path in (SOLUTIONS / "assignment1").glob("*.py"):
        shutil.copy(path, flat / path.name)
    return root


@pytest.fixture(scope="session")
def graded(class_dir, quick_course, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`grade batch` of class_dir: (OUT, the finished process)."""
    out = tmp_path_factory.mktemp("out")
    proc = run_grade("batch", str(class_dir), "--assignment", "assignment1", "--jobs", "2", "--out", str(out),
                     "--course", str(quick_course))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    return out, proc
