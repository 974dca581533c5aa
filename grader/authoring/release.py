"""The student kit: what `grade release DIR` writes, and what it leaves with the instructors.

It ships the stubs, the grader package, the public tier (its test modules, the stored
reference outputs and every module of the course folder they import), a course.toml that
lists public checks only, a pyproject.toml without the instructors' extras, and a README for
students (grader.authoring.readme). It leaves out the solutions, the hidden tier and its seed, the
sources of the stored cases, the kit's own tests, benchmarks and CI: nothing is copied that is not named here.

The release is written only when the stubs and the stored outputs are current (what the kit's
tests checked is what ships), into a new or empty folder outside the kit (inside it, the kit's
pytest, ruff and `find_course` would pick it up), and is audited before it is left in place.
"""

import hashlib
import json
import shutil
import tomllib
from pathlib import Path
from typing import Protocol

import tomli_w

import grader
from grader import imports
from grader.authoring.audit import audit, hidden_ids
from grader.authoring.readme import readme_text
from grader.course import Course, load
from grader.course_table import ConfigError
from grader.results import Tier

# the kit's extras that only instructors and the kit's developers install (docs: the site)
INSTRUCTOR_EXTRAS = ("dev", "instructor", "docs")


# what the student README's own steps create in the kit (a venv, --repro's scripts, --json's reports,
# Hypothesis's and the kit's caches): `git status` in a student's repository shows their work only
GITIGNORE = """__pycache__/
*.egg-info/
.hypothesis/
.venv/
venv/
repro_*.py
report.json
.kit-cache/
.ipynb_checkpoints/
*.before-update
"""
MANIFEST = ".kit-release.json"  # the files a release wrote and their digests: what `--update` may replace


class Steps(Protocol):
    """What a release tells as it goes (the command line draws it with rich: grader.commands.release)."""

    def step(self, what: str, total: int | None = None) -> None: ...  # a new step, of `total` items if counted

    def advance(self, item: str) -> None: ...  # one item of the step done


class Quiet:
    def step(self, what: str, total: int | None = None) -> None:
        pass

    def advance(self, item: str) -> None:
        pass


def write_release(*, course: Course, out: Path, steps: Steps | None = None) -> list[Path]:
    """Write the student kit of `course` to `out`; return the files written, under `out`. `steps` hears
    of each step (the bug table's check, which grades every bug, is the long one)."""
    out = Path(out).resolve()
    package = Path(grader.__file__).resolve().parent
    _check_destination(out, kit=(course.root, package.parent))
    steps = steps or Quiet()
    check_current(course, steps)
    return write_kit(course, out, steps)


def check_current(course: Course, steps: Steps) -> None:
    """A ConfigError unless the stubs, the stored outputs and the bug table are what the course makes."""
    from grader.authoring import stubs

    if not course.reference.is_dir():
        raise ConfigError(f"release: no reference tree at {str(course.reference)!r}: grade release runs in the "
                          "instructors' kit")
    try:
        steps.step("checking the stubs")
        stale = stubs.write_all(course, check=True)
        steps.step("loading PyTorch")
        from grader.authoring import expected

        steps.step("checking the stored outputs and the table of classic bugs (grades each bug)",
                   total=len(expected.load_bugs(course)))
        stale += expected.write_all(course, check=True, on_bug=steps.advance)
    except stubs.MarkerError as e:
        raise ConfigError(f"release: {e} (solution markers must pair up inside a function)") from None
    if stale:
        raise ConfigError(f"release: {len(stale)} generated file(s) are stale, first {str(stale[0])!r}: run "
                          "grade stubs and grade expected first")


def write_kit(course: Course, out: Path, steps: Steps) -> list[Path]:
    from grader.authoring import stubs

    package = Path(grader.__file__).resolve().parent
    steps.step("writing the kit")
    copies = {**{Path("grader") / p.relative_to(package): p for p in _files(package)}, **_public_tier(course),
              **{_relative(p, course): p for p in stubs.expected_stubs(course)}}
    texts = {Path("course.toml"): course_text(course, performance=True), Path("README.md"): readme_text(course),
             Path("pyproject.toml"): pyproject_text(package.parent / "pyproject.toml"),
             Path(".gitignore"): GITIGNORE, **student_bugs(course)}
    copies = {rel: src for rel, src in copies.items() if rel not in texts}  # the bug table ships in its student form
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        for rel, src in copies.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / rel)
        for rel, text in texts.items():
            (out / rel).write_text(text)
        load(out / "course.toml")  # the release grades with it: it must read as the kit's does
        steps.step("auditing the kit (no solution, no hidden check)")
        problems = audit(out, course)
        if problems:
            raise ConfigError(f"release: {problems[0]} ({len(problems)} problem(s); nothing was written)")
        written = sorted(out / rel for rel in [*copies, *texts])
        (out / MANIFEST).write_text(json.dumps(digests(out, written), indent=1, sort_keys=True) + "\n")
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # it was empty or missing: leave it so
        if not created:
            out.mkdir()
        raise
    return [*written, out / MANIFEST]


def digests(root: Path, paths: list[Path]) -> dict[str, str]:
    """relative path -> sha256 of each file (the manifest of a release)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _check_destination(out: Path, kit: tuple[Path, ...]) -> None:
    for folder in kit:
        if out.is_relative_to(folder.resolve()):
            raise ConfigError(f"release: {str(out)!r} is inside the kit ({folder}): write the release outside it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"release: {str(out)!r} is not an empty folder (grade release writes a fresh one; "
                          "--update brings a kit it wrote earlier to this release)")


def _relative(path: Path, course: Course) -> Path:
    if not path.resolve().is_relative_to(course.root):
        raise ConfigError(f"release: {str(path)!r} lies outside the course folder {str(course.root)!r}")
    return path.resolve().relative_to(course.root)


def _files(folder: Path) -> list[Path]:
    """Every file under `folder` but bytecode."""
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
            and p.suffix != ".pyc"]


def _public_tier(course: Course) -> dict[Path, Path]:
    """The public and GPU tiers' folders (tests and stored outputs), the conftest.py files above
    them, and every module of the course folder that those import, directly or not (not the grader's)."""
    public = course.suites / Tier.PUBLIC
    files = {_relative(p, course): p for tier in (Tier.PUBLIC, Tier.CUDA) for p in _files(course.suites / tier)}
    start = [p for p in files.values() if p.suffix == ".py"]
    start += [d / "conftest.py" for d in public.parents if d.is_relative_to(course.root)
              and (d / "conftest.py").is_file()]
    files.update({_relative(p, course): p for p in imports.closure(start, course.root)})
    return files


def student_bugs(course: Course) -> dict[Path, str]:
    """The bug table in the student form of the instructor's [feedback] reveal (grader.judging.diagnosis.
    student_form): what that level shows and no more, whatever the student's course.toml says."""
    from grader.judging import diagnosis

    path = diagnosis.path_for(course)
    if not path.is_file():
        return {}
    return {_relative(path, course): diagnosis.student_text(diagnosis.load(course), course.reveal)}


def course_text(course: Course, *, folders: dict[str, str] | None = None, performance: bool = False) -> str:
    """course.toml for students: public and GPU checks only, no hidden seed, no reference tree.

    `folders`: its [course] assignments and suites, where they are not where the course's own
    lie relative to it (an nbgrader release: grader.gradebook.public); `performance`: keep the
    [performance] table, so that students get the timings the kit's README describes (`grade release`)."""
    data = tomllib.loads(course.path.read_text())
    hidden = hidden_ids(course)
    folders = folders or {"assignments": _relative(course.assignments_dir, course).as_posix(),
                          "suites": _relative(course.suites, course).as_posix()}
    kept: dict = {"course": {"name": course.name, **folders}}
    if "limits" in data:
        kept["limits"] = data["limits"]
    if "feedback" in data:  # how much the student's own reports tell of a diagnosis
        kept["feedback"] = data["feedback"]
    if "policy" in data:  # what a flag costs: the student's own report holds what the instructor's does
        kept["policy"] = data["policy"]
    kept["hypothesis"] = {k: v for k, v in data.get("hypothesis", {}).items() if k != "hidden_seed"}
    if performance and "performance" in data:
        kept["performance"] = data["performance"]
    for a_name, a in course.assignments.items():
        kept[a_name] = {k: v for k, v in data[a_name].items() if not isinstance(v, dict)}
        for comp in a.components:
            if not any(chk.tier != Tier.HIDDEN for chk in comp.checks):
                raise ConfigError(f"release: {a_name}.{comp.name} has hidden checks only: students could not "
                                  "be graded on it")
            table = {k: v for k, v in data[a_name][comp.name].items() if k != Tier.HIDDEN}
            for key in ("isolated", Tier.CUDA):
                if key in table:
                    table[key] = [i for i in table[key] if i not in hidden]
            if "weights" in table:
                table["weights"] = {i: w for i, w in table["weights"].items() if i not in hidden}
            kept[a_name][comp.name] = {k: v for k, v in table.items() if v not in ([], {})}
    header = (f"# {course.name}: the student kit's course file, written by `grade release`.\n"
              "# It lists the public checks, which `grade assignmentN` runs here; your instructor also grades\n"
              "# with hidden checks, which are not in this kit. Edit nothing here: the instructor's copy counts.\n\n")
    return header + tomli_w.dumps(kept)


def pyproject_text(kit_pyproject: Path) -> str:
    """The kit's pyproject.toml without the instructors' extras and the kit's tool settings, but
    setuptools': the release installs the same `grade` command."""
    if not kit_pyproject.is_file():
        raise ConfigError(f"release: no pyproject.toml beside the grader package ({str(kit_pyproject)!r})")
    data = tomllib.loads(kit_pyproject.read_text())
    project = data.get("project", {})
    extras = {k: v for k, v in project.get("optional-dependencies", {}).items() if k not in INSTRUCTOR_EXTRAS}
    project = {k: v for k, v in project.items() if k != "optional-dependencies"}
    if extras:
        project["optional-dependencies"] = extras
    kept = {"build-system": data.get("build-system", {}), "project": project}
    if "setuptools" in data.get("tool", {}):
        kept["tool"] = {"setuptools": data["tool"]["setuptools"]}
    return "# the student kit's package, written by `grade release`: pip install -e .\n" + tomli_w.dumps(kept)
