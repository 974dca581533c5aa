"""`grade release`: the student kit holds no solution code and no hidden material, and grades once installed."""

import dataclasses
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader import load_course, words
from grader.authoring.audit import audit
from grader.authoring.release import course_text, student_bugs
from grader.authoring.stubs import BEGIN, END, make_stub
from grader.judging import diagnosis
from grader.results import Details, Outcome
from grader.reveal import Reveal
from tests.grading.bugs import BUGS
from tests.kit.conftest import ROOT, SOLUTIONS, mutant, run_grade
from tests.kit.kit_course import COURSE
from tests.kit.release_bug_table import BUGS_JSON, TABLE

pytestmark = pytest.mark.xdist_group("release")  # one release and one venv, built once
HIDDEN = {chk.id for a in COURSE.assignments.values() for comp in a.components for chk in comp.checks
          if chk.tier == "hidden"}
SWAP = BUGS["layer_norm_gamma_and_beta_swapped"].patches
FIX_OF_SWAP, WHAT_OF_SWAP = TABLE["layer_norm_gamma_and_beta_swapped"]["fix"], \
    TABLE["layer_norm_gamma_and_beta_swapped"]["message"]


def files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`grade release` into a new folder, run once: (the folder, the finished process)."""
    out = tmp_path_factory.mktemp("handout") / "kit"  # missing: grade release creates it
    return out, run_grade("release", str(out))


@pytest.fixture(scope="module")
def release(released) -> Path:
    out, proc = released
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return out


def test_stored_expected_outputs_are_up_to_date(released):
    """`grade expected --check` finds nothing stale. `grade release` runs that very check first
    (grader.authoring.expected.write_all(check=True), with grade stubs' own, which test_course runs)
    and refuses a stale kit, naming the first stale file: the kit runs it here alone, since it grades
    every bug of the table (a minute of CI)."""
    _, proc = released
    assert "stale" not in proc.stderr, f"run `grade expected` (and `grade stubs`):\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the release installed as a student does (pip install -e), offline:
    its `grade` script and the environment to run it in."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # torch, pytest, Hypothesis, rich, setuptools and pip are borrowed from this interpreter (there is
    # no network here), through links to each of its packages but the kit's own installation, so that
    # pip neither sees nor touches it and the grader can only come from the release
    borrowed = venv / "borrowed"
    borrowed.mkdir()
    kit = ("grader", "transformer_course_kit", "transformer-course-kit", "__editable__")
    for folder in filter(Path.is_dir, map(Path, site.getsitepackages())):  # Debian's lists one that may not be
        for entry in folder.iterdir():
            if not entry.name.startswith(kit) and not (borrowed / entry.name).exists():
                (borrowed / entry.name).symlink_to(entry)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                             capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "_borrowed.pth").write_text(f"{borrowed}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env |= {"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "NO_COLOR": "1", "TERM": "dumb",
            "COLUMNS": "100",
            # the namespace jail mounts the venv's own site-packages, not the borrowed packages it links to:
            # a student's venv holds its own
            "GRADER_ISOLATION": "process"}
    proc = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-e",
                           str(release)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return venv / "bin" / "grade", env


def test_release_holds_the_stubs_and_no_solution_code(release):
    marked = {p.read_bytes() for p in SOLUTIONS.rglob("*.py") if make_stub(p.read_text(), "x") != p.read_text()}
    assert len(marked) >= 4, "the solutions should have marked code for this check to mean something"
    mentions = []
    for path in files(release):
        data, rel = path.read_bytes(), path.relative_to(release).as_posix()
        assert data not in marked, f"{rel} is a copy of a solution file"
        lines = {line.strip() for line in data.splitlines()}
        assert BEGIN.encode() not in lines and END.encode() not in lines, f"{rel} holds a solution marker"
        if BEGIN.encode() in data or END.encode() in data:
            mentions.append(rel)
    # the stub generator names the markers as string constants; nothing else may
    assert mentions == ["grader/authoring/stubs.py"]
    assert not (release / "solutions").exists()
    shipped = {p.relative_to(release): p.read_bytes() for p in files(release / "assignments")}
    stubs = {p.relative_to(ROOT): p.read_bytes() for p in files(ROOT / "assignments") if "__pycache__" not in p.parts}
    assert shipped == stubs


def test_release_holds_no_hidden_material(release):
    assert HIDDEN
    named = re.compile(rb"(?<![A-Za-z0-9_])(?:test_)?(" + b"|".join(re.escape(h.encode()) for h in HIDDEN)
                       + rb")(?![A-Za-z0-9_])")
    for path in files(release):
        rel = path.relative_to(release)
        assert "hidden" not in rel.parts, rel
        found = named.search(path.read_bytes())
        assert found is None, f"{rel} names the hidden check {found.group(1).decode()}"
    for absent in ("solutions", "tests/grading/hidden", "tests/grading/cases", "tests/kit", "benchmarks", ".ci"):
        assert not (release / absent).exists(), absent
    text = (release / "course.toml").read_text()
    assert "hidden_seed" not in text and not re.search(rf"\b{COURSE.hidden_seed}\b", text)
    assert set(tomllib.loads(text)["course"]) == {"name", "assignments", "suites"}  # no reference tree
    extras = tomllib.loads((release / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not {"dev", "instructor", "docs"} & set(extras), extras


def test_release_course_keeps_every_public_check(release):
    shipped = load_course(release / "course.toml")
    assert (shipped.name, shipped.limits, shipped.max_examples) == (COURSE.name, COURSE.limits, COURSE.max_examples)
    assert list(shipped.assignments) == list(COURSE.assignments)
    for a in COURSE.assignments:  # the GPU tier ships: its checks are listed, so they must run there
        kit = ROOT / "tests" / "grading" / "cuda" / f"test_{a}.py"
        assert not kit.exists() or (release / kit.relative_to(ROOT)).read_bytes() == kit.read_bytes()
    for a in COURSE.assignments.values():
        mine = {c.name: c for c in shipped.assignments[a.name].components}
        assert list(mine) == [c.name for c in a.components]
        for comp in a.components:
            got = mine[comp.name]
            assert (got.points, got.file, got.depends, got.forbidden) == (comp.points, comp.file, comp.depends,
                                                                           comp.forbidden)
            assert got.checks == tuple(c for c in comp.checks if c.tier != "hidden")
            assert got.isolated == tuple(i for i in comp.isolated if i not in HIDDEN)
    expected = ROOT / "tests/grading/public/expected"  # the bug table in its student form (below)
    assert {p.name: p.read_bytes() for p in files(release / "tests/grading/public/expected") if p.name != "bugs.json"} \
        == {p.name: p.read_bytes() for p in files(expected) if p.name != "bugs.json"}


def test_release_refuses_a_non_empty_folder_and_the_kit_itself(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    inside = ROOT / "release-that-must-not-exist"
    for target, named in ((tmp_path, str(tmp_path)), (inside, "inside the kit")):
        proc = run_grade("release", str(target))
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and named in lines[0], proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and not inside.exists()


def test_installed_release_grades_the_stubs_and_a_correct_tree(release, installed, tmp_path):
    grade, env = installed

    def report(*args: str) -> dict:
        proc = subprocess.run([grade, *args, "--json", "-"], cwd=release, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    where = subprocess.run([grade.parent / "python", "-c", "import grader; print(grader.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(release), where

    stubs = report("assignment1")  # the release's own assignments/, found from its course.toml
    assert Path(stubs["submission"]) == release / "assignments"
    assert stubs["score"] == 0 and {c["status"] for c in stubs["components"]} == {"not attempted"}
    assert {t["tier"] for c in stubs["components"] for t in c["tests"]} == {"public"}
    assert any(note.startswith("Public checks only") for note in stubs["notes"]), stubs["notes"]

    tree = tmp_path / "submission"
    shutil.copytree(SOLUTIONS, tree, ignore=shutil.ignore_patterns("__pycache__"))
    for assignment in ("assignment1", "assignment2"):
        solved = report(assignment, "--submission", str(tree))
        tests = [t for c in solved["components"] for t in c["tests"]]
        assert solved["score"] == solved["max_score"] > 0, [t for t in tests if t["status"] != "passed"]
        assert {t["status"] for t in tests} == {"passed"} and {t["tier"] for t in tests} == {"public"}


@pytest.mark.needs("git")
def test_the_released_gitignore_covers_what_the_readme_s_steps_create(release):
    """A student who follows the README (a venv, --repro's scripts, --json's report) sees only their own
    work in `git status`: git itself reads the .gitignore."""
    made = [".venv/bin/python", "repro_layer_norm_matches_torch.py", "report.json", ".hypothesis/x",
            "assignments/assignment1/__pycache__/x.pyc", ".kit-cache/reports/x"]
    tree = release.parent / "gitignored"
    shutil.copytree(release, tree)
    for rel in made:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("made by the README's steps")
    (tree / "notes.md").write_text("mine")
    subprocess.run(["git", "init", "-q", str(tree)], check=True, timeout=60)
    shown = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tree, check=True,
                           capture_output=True, text=True, timeout=60).stdout.splitlines()
    untracked = {line[3:] for line in shown}
    assert "notes.md" in untracked and not {rel for rel in made if rel in untracked}, sorted(untracked)


def test_update_keeps_a_students_work_and_brings_the_new_kit_files(release, tmp_path):
    """`grade release DIR --update`'s overlay (grader.authoring.update._overlay; the command checks the kit
    as a release does first, a minute of grading that test_stored_expected_outputs_are_up_to_date pays
    once) on a student's copy of an older release: their edited assignment files and their own files
    stay, untouched stubs and kit files become this release's, new files arrive, dropped ones go."""
    from grader.authoring import release as releasing
    from grader.authoring import update

    student = tmp_path / "student"
    shutil.copytree(release, student)
    manifest = json.loads((student / releasing.MANIFEST).read_text())
    mine = "assignments/assignment1/layer_norm.py"
    (student / mine).write_text((student / mine).read_text() + "\n# my LayerNorm, half done\n")
    (student / "notes.md").write_text("mine")
    (student / "README.md").write_text("my notes on the README")

    def older(rel: str, text: str) -> None:  # the older release had another version of this file
        (student / rel).write_text(text)
        manifest[rel] = hashlib.sha256(text.encode()).hexdigest()

    older("grader/words.py", "# an older grader\n")
    older("assignments/assignment2/attention.py", "# an older stub, untouched\n")
    manifest[mine] = hashlib.sha256(b"# an older stub of the file the student edited\n").hexdigest()
    older("grader/dropped.py", "# a module this release no longer has\n")
    new_file = "tests/grading/public/test_assignment3.py"
    (student / new_file).unlink()
    (student / releasing.MANIFEST).write_text(json.dumps(manifest))

    done = update._overlay(release, student, manifest, "assignments")
    assert (student / mine).read_text().endswith("# my LayerNorm, half done\n")
    assert (student / "notes.md").read_text() == "mine"
    assert (student / "README.md.before-update").read_text() == "my notes on the README"
    for rel in ("README.md", "grader/words.py", "assignments/assignment2/attention.py", new_file):
        assert (student / rel).read_bytes() == (release / rel).read_bytes(), rel
    assert not (student / "grader/dropped.py").exists()
    assert (done.kept, done.stale_stubs, done.added, done.removed, done.set_aside) == \
        ([mine], [mine], [new_file], ["grader/dropped.py"], ["README.md"])
    assert done.replaced == ["README.md", "assignments/assignment2/attention.py", "grader/words.py"]
    assert json.loads((student / releasing.MANIFEST).read_text()) == \
        json.loads((release / releasing.MANIFEST).read_text())
    again = update._overlay(release, student, json.loads((student / releasing.MANIFEST).read_text()), "assignments")
    assert (again.added, again.replaced, again.removed, again.kept) == ([], [], [], [mine])  # nothing more to do


def test_update_refuses_a_folder_that_is_no_release(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run_grade("release", str(tmp_path), "--update")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("grade: release: --update:") \
        and ".kit-release.json" in lines[0], proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_the_student_kit_offers_nbgrader_for_the_nbgrader_page(release):
    """docs/how-to/nbgrader.md's students run `nbgrader fetch_assignment` and `submit`: the kit they get
    installs nbgrader with `pip install -e ".[nbgrader]"`, the version the instructors' extra pins."""
    kit = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    shipped = tomllib.loads((release / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pinned = [d for d in kit["instructor"] if d.startswith("nbgrader")]
    assert pinned and shipped["nbgrader"] == pinned
    assert 'pip install -e ".[nbgrader]"' in (ROOT / "docs/how-to/nbgrader.md").read_text()


def test_the_readme_s_report_is_what_a_student_kit_prints_today(release, installed, tmp_path):
    """README.md opens with a student's `grade assignment1` on a kit made by `grade release`, with
    LayerNorm's eps outside the square root: the installed release prints it, line for line, at 80
    columns; but where the machine shows (the submission's folder, the time, the isolation tier)."""
    from tests.grading.bugs import BUGS
    from tests.kit.conftest import mutant

    grade, env = installed
    tree = mutant(tmp_path, BUGS["layer_norm_eps_outside_sqrt"].patches)
    proc = subprocess.run([grade, "assignment1", "--submission", str(tree)], cwd=release,
                          env={**env, "COLUMNS": "80"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = re.search(r"```text\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert shown

    def steady(lines: list[str]) -> list[str]:
        machine = ("submission ", "isolation ")
        return [re.sub(r", graded in [\d.]+ s", "", line.rstrip()) for line in lines if not line.startswith(machine)]

    assert steady(shown.group(1).splitlines()) == steady(proc.stdout.splitlines()), proc.stdout

# the bug table ships in the student form of the instructor's [feedback] reveal (issue 51) -----------------

def kit_at(release: Path, level: Reveal, folder: Path) -> tuple[Path, object]:
    """A student kit of `level`, cut from the one release this module builds: its course.toml and bug
    table written again by the functions `grade release` writes them with, for the kit's course at
    `level` (a release per level would grade every bug of the table again, a minute each). Returns (the
    kit, the instructor's course at that level)."""
    course = dataclasses.replace(COURSE, reveal=level)
    shutil.copytree(release, folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    text = course_text(course, performance=True)
    if level is not Reveal.FIX:  # the kit's course.toml has no [feedback]: the level as an instructor sets it
        text += f'\n[feedback]\nreveal = "{level}"\n'
    (folder / "course.toml").write_text(text)
    for rel, table in student_bugs(course).items():
        (folder / rel).write_text(table)
    return folder, course


def test_the_released_bug_table_holds_what_the_level_shows(release):
    shipped = json.loads((release / BUGS_JSON).read_text())
    assert shipped == diagnosis.student_form(TABLE, Reveal.FIX)  # the kit's level: no [feedback], "fix"
    assert set(shipped["bugs"]) == set(TABLE) and not any("repro" in e for e in shipped["bugs"].values())
    assert audit(release, COURSE) == []


@pytest.mark.parametrize("level", list(Reveal))
def test_a_kit_of_each_level_holds_no_fix_or_message_past_it_and_the_audit_finds_any(release, tmp_path, level):
    kit, course = kit_at(release, level, tmp_path / "kit")
    assert audit(kit, course) == []
    shipped = json.loads((kit / BUGS_JSON).read_text())
    assert shipped["reveal"] == level.value and len(shipped["bugs"]) == len(TABLE)
    entries = list(shipped["bugs"].values())
    assert all(("fix" in e) is (level is Reveal.FIX) and ("message" in e) is (level is not Reveal.CHECK)
               for e in entries)
    assert (set(shipped["bugs"]) == set(TABLE)) is (level is not Reveal.CHECK)  # at "check", no bug's name
    text = (kit / BUGS_JSON).read_text()
    assert ("Should be" not in text) and (FIX_OF_SWAP in text) is (level is Reveal.FIX)
    # the whole table put back (as today's release shipped it), or one fix in another data file: found
    shutil.copyfile(ROOT / BUGS_JSON, kit / BUGS_JSON)
    found = audit(kit, course)
    assert bool(found) is (level is not Reveal.FIX), found
    assert all(str(BUGS_JSON) in p and f'reveal = "{level}"' in p for p in found), found
    (kit / BUGS_JSON).write_text(student_bugs(course)[BUGS_JSON])
    (kit / "README.md").write_text((kit / "README.md").read_text() + f"\nHint: {FIX_OF_SWAP}\n")
    assert bool(audit(kit, course)) is (level is not Reveal.FIX)
    # and a hidden check's id anywhere, at every level
    (kit / "README.md").write_text(f"see test_{sorted(HIDDEN)[0]}\n")
    assert any("names the hidden check" in p for p in audit(kit, course))


def test_a_student_who_raises_the_level_in_course_toml_gets_no_fix(release, tmp_path):
    """A kit released at "bug": the student's copy of course.toml edited to "fix" (today that brought
    every "Should be:" back) still names the bug from the shipped table, and shows no fix; at "check" the
    table names no bug, so nothing is said at any level the student writes."""
    kit, _ = kit_at(release, Reveal.BUG, tmp_path / "kit")
    toml = kit / "course.toml"
    toml.write_text(toml.read_text().replace('reveal = "bug"', 'reveal = "fix"'))
    assert load_course(toml).reveal is Reveal.FIX and diagnosis.told(load_course(toml)) is Reveal.BUG
    proc = run_grade("assignment1", "--submission", str(mutant(tmp_path, SWAP)), "--json", "-", cwd=kit)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    data = json.loads(proc.stdout)  # the student's own report: graded without the reference
    assert data["reveal"] == "bug"
    ln = next(c for c in data["components"] if c["name"] == "LayerNorm")
    assert WHAT_OF_SWAP in json.dumps(ln["diagnosis"]) and FIX_OF_SWAP not in proc.stdout, ln["diagnosis"]
    # the same failures against the "check" kit's table: its level caps the report, and no bug is named
    check, _ = kit_at(release, Reveal.CHECK, tmp_path / "check")
    toml = check / "course.toml"
    toml.write_text(toml.read_text().replace('reveal = "check"', 'reveal = "fix"'))
    course = load_course(toml)
    assert diagnosis.told(course) is Reveal.CHECK
    spec = course.assignment("assignment1")
    results = {t["id"]: Outcome(t["status"], t["reason"], t["message"], Details.from_json(t))
               for c in data["components"] for t in c["tests"]}
    found = words.worded(diagnosis.diagnose(course, spec, results)["LayerNorm"]) or {}  # the data with its words
    assert not any(found.get(k) for k in ("message", "what", "fix")), found
    named = json.dumps({k: v for k, v in found.items() if k != "explains"})  # the public checks it explains
    assert WHAT_OF_SWAP not in named and "gamma_and_beta" not in named, found
