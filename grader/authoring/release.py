"""The student kit: what `grade release DIR` writes, and what it leaves with the instructors.

It ships the stubs, the grader package, the public tier (its test modules, the stored
reference outputs and every module of the course folder they import), a course.toml that
lists public checks only, a pyproject.toml without the instructors' extras, and a README for
students. It leaves out the solutions, the hidden tier and its seed, the sources of the stored
cases, the kit's own tests, benchmarks and CI: nothing is copied that is not named here.

The release is written only when the stubs and the stored outputs are current (what the kit's
tests checked is what ships), into a new or empty folder outside the kit (inside it, the kit's
pytest, ruff and `find_course` would pick it up), and is audited before it is left in place.
"""

import re
import shutil
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

import tomli_w

import grader
from grader import imports
from grader.course import ConfigError, Course, load

# the kit's extras that only instructors and the kit's developers install
INSTRUCTOR_EXTRAS = ("dev", "instructor")


def write_release(*, course: Course, out: Path) -> list[Path]:
    """Write the student kit of `course` to `out`; return the files written, under `out`."""
    from grader.authoring import expected, stubs

    out = Path(out).resolve()
    package = Path(grader.__file__).resolve().parent
    _check_destination(out, kit=(course.root, package.parent))
    if not course.reference.is_dir():
        raise ConfigError(f"release: no reference tree at {str(course.reference)!r}: grade release runs in the "
                          "instructors' kit")
    try:
        stale = stubs.write_all(course, check=True) + expected.write_all(course, check=True)
    except stubs.MarkerError as e:
        raise ConfigError(f"release: {e} (solution markers must pair up inside a function)") from None
    if stale:
        raise ConfigError(f"release: {len(stale)} generated file(s) are stale, first {str(stale[0])!r}: run "
                          "grade stubs and grade expected first")

    copies = {**{Path("grader") / p.relative_to(package): p for p in _files(package)}, **_public_tier(course),
              **{_relative(p, course): p for p in stubs.expected_stubs(course)}}
    texts = {Path("course.toml"): course_text(course, performance=True), Path("README.md"): readme_text(course),
             Path("pyproject.toml"): pyproject_text(package.parent / "pyproject.toml"),
             Path(".gitignore"): "__pycache__/\n*.egg-info/\n.hypothesis/\n"}
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        for rel, src in copies.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / rel)
        for rel, text in texts.items():
            (out / rel).write_text(text)
        load(out / "course.toml")  # the release grades with it: it must read as the kit's does
        problems = audit(out, course)
        if problems:
            raise ConfigError(f"release: {problems[0]} ({len(problems)} problem(s); nothing was written)")
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # it was empty or missing: leave it so
        if not created:
            out.mkdir()
        raise
    return sorted(out / rel for rel in [*copies, *texts])


def _check_destination(out: Path, kit: tuple[Path, ...]) -> None:
    for folder in kit:
        if out.is_relative_to(folder.resolve()):
            raise ConfigError(f"release: {str(out)!r} is inside the kit ({folder}): write the release outside it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"release: {str(out)!r} is not an empty folder (grade release writes a fresh one)")


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
    public = course.suites / "public"
    files = {_relative(p, course): p for tier in ("public", "cuda") for p in _files(course.suites / tier)}
    start = [p for p in files.values() if p.suffix == ".py"]
    start += [d / "conftest.py" for d in public.parents if d.is_relative_to(course.root)
              and (d / "conftest.py").is_file()]
    files.update({_relative(p, course): p for p in imports.closure(start, course.root)})
    return files


def hidden_ids(course: Course) -> set[str]:
    return {chk.id for a in course.assignments.values() for comp in a.components for chk in comp.checks
            if chk.tier == "hidden"}


def audit(out: Path, course: Course) -> list[str]:
    """What must never ship, found under `out`: solution markers, solution files, hidden folders or check ids."""
    from grader.authoring.stubs import BEGIN, END

    hidden = hidden_ids(course)
    hidden_id = re.compile(rb"(?<![A-Za-z0-9_])(?:test_)?(" + b"|".join(re.escape(h.encode()) for h in hidden)
                           + rb")(?![A-Za-z0-9_])") if hidden else None
    solutions = {p.read_bytes() for p in course.reference.rglob("*.py") if BEGIN in p.read_text()}
    problems = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data, rel = path.read_bytes(), path.relative_to(out)
        if "hidden" in rel.parts:
            problems.append(f"{rel} is in a hidden folder")
        if any(line.strip() in (BEGIN.encode(), END.encode()) for line in data.splitlines()):
            problems.append(f"{rel} holds a solution marker")
        if data in solutions:
            problems.append(f"{rel} is a copy of a solution file")
        if hidden_id and (m := hidden_id.search(data)):
            problems.append(f"{rel} names the hidden check {m.group(1).decode()}")
    return problems


# generated files ----------------------------------------------------------------------------

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
    kept["hypothesis"] = {k: v for k, v in data.get("hypothesis", {}).items() if k != "hidden_seed"}
    if performance and "performance" in data:
        kept["performance"] = data["performance"]
    for a_name, a in course.assignments.items():
        kept[a_name] = {k: v for k, v in data[a_name].items() if not isinstance(v, dict)}
        for comp in a.components:
            if not any(chk.tier != "hidden" for chk in comp.checks):
                raise ConfigError(f"release: {a_name}.{comp.name} has hidden checks only: students could not "
                                  "be graded on it")
            table = {k: v for k, v in data[a_name][comp.name].items() if k != "hidden"}
            for key in ("isolated", "cuda"):
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


README = """\
# {name}

You build the Transformer of *Attention Is All You Need* (Vaswani et al., 2017) in PyTorch,
one component at a time. After every step `grade` tells you, component by component, what
works, what does not, and why.

## Set up

Python 3.11 or newer, on Linux, macOS or WSL2 (the Windows Subsystem for Linux). On Windows
itself `grade` does not run (it says so in one line): install WSL2 and work there.

Make a virtual environment for the course, install the exact PyTorch version the grader was
checked with, `torch=={torch}`, then this kit, from this folder:

```bash
python3 -m venv .venv
source .venv/bin/activate
pip install torch=={torch}
pip install -e .
grade assignment1
```

`torch=={torch}` pins the version, not the build: on Linux pip picks the large CUDA build. The
CPU build is enough: pytorch.org's install selector gives the command that installs it (for
{torch}); then run the lines above, which keep it. Open a new terminal? `source
.venv/bin/activate` again first.

## What to build

| assignment | what it is about | components |
|---|---|---|
{assignments}

Each component is a stub in `assignments/` whose docstring says what to build: the idea,
the formula, the shapes, the exact names the grader relies on, and what you may not use.
Replace its `raise NotImplementedError(...)` with your code. Later assignments import your
earlier ones, so assignment3 runs on your own attention.

## Grading your work

`grade assignmentN`, run anywhere in this folder, grades `assignments/assignmentN` (and the
assignments it builds on) and prints a report: points per component, *not attempted* for the
stubs you have not started, and for every failed check the value that was expected, the value
that came back, the largest error and where, the smallest input that shows it, and a hint.
The last line names the component to fix first. Anything your code prints is shown under
*your output*.

- `grade assignmentN --watch` keeps running and grades again each time you save a file of the
  assignment; the new report replaces the old one. Ctrl-C stops it.
- `grade assignmentN --verbose` shows every failed check in full (the report shows the most
  telling one per component and names the others){timings}.
- `grade assignmentN --only CHECK[,CHECK...]` runs only those checks (their ids are in the
  report: `grade assignment2 --only sdpa_matches_torch`); the report lists them alone, and its
  score counts them alone. It combines with `--watch`.
- `grade assignmentN --json report.json` also writes the report as JSON.
- `grade train assignment4` trains your own Transformer on a small translation task
  (`pip install -e ".[plots]"` for its pictures).

Grading is deterministic: the same code always gets the same grade here.
{performance}
## Debugging a failed check

`grade assignmentN --repro CHECK` writes `repro_CHECK.py` in the current folder and prints its
path: a plain script that imports torch and your files only (not the grader), rebuilds the
check's failing example exactly, runs your code on it, and prints the inputs, the expected and
the obtained values and the largest error. It exits with status 1 while your code fails it and
0 once it is fixed. Run it with `python repro_CHECK.py`, under `python -m pdb repro_CHECK.py`,
or in your editor's debugger with a breakpoint in your own code. It knows these checks (for any
other it says so, and names the ones it knows):

- those that compare with stored reference outputs ({stored}): the script carries the stored
  inputs, weights and outputs as numbers;
- {examples}: the script carries the smallest failing example the grader found.

## In a notebook (Jupyter, Colab)

From a notebook whose kernel runs in the environment above (or after `!pip install -e .`):

```python
import grader
report = grader.check("assignment1")          # the report, shown in the cell
report["score"], report["max_score"]           # the JSON report, as a dict
grader.check("assignment2", only="sdpa_matches_torch")
```

`grader.check(assignment, submission=None, only=None, verbose=False)` grades `submission` (default:
this kit's `assignments/`). `!grade assignment1` in a cell works too; it shows no spinner there.

## Hidden checks

This kit holds the public checks only (`tests/grading/public/`, listed in `course.toml`). Your
instructor grades with these and with hidden checks on other inputs and seeds, which are not
in this kit, so a full score here is feedback, not the grade. Keep `grader/`, `tests/` and
`course.toml` as they are: the instructor grades with their own copies.

## Handing in

Hand in the `assignments/` folder as your instructor asks. Only the files listed in
`course.toml` are graded. Delete the `repro_*.py` scripts first if they are inside it.
"""

# what the built-ins are that each kind is timed against (grader/sandbox/child/profile.py)
TIMED_AGAINST = {"attention": "F.scaled_dot_product_attention", "multi_head_attention": "nn.MultiheadAttention",
                 "encoder_layer": "nn.TransformerEncoderLayer"}


def torch_version() -> str:
    """The torch this kit grades with here, without a local build tag (`2.13.0+cpu` -> `2.13.0`): the
    version students are told to install."""
    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        raise ConfigError("release: torch is not installed here: the student README names the version the "
                          "kit grades with") from None


def _performance_text(course: Course) -> tuple[str, str]:
    """(what --verbose adds, the README's paragraph on performance feedback) for the course's [performance]."""
    config = course.performance
    if config is None or not config.components:
        return "", ("\nThis course gives no performance feedback: the report says nothing of how fast your code "
                    "is.\n")
    timed = ", ".join(f"`{name}` (against `{TIMED_AGAINST.get(kind, kind)}`)" for name, kind in
                      config.components.items())
    worth = ("It is feedback only and costs no points; the report shows it with `--verbose`." if not config.points
             else f"It is worth {config.points:g} points, shared by the components within {config.max_ratio:g} "
                  "times PyTorch's CPU time, and the report always shows it.")
    text = (f"After the checks, `grade` times the forward and backward passes of {timed} on the same shapes, on "
            "the CPU, and shows the ratios (below 1 is faster) and the memory your code keeps for backward. "
            f"{worth} They are measured in your own process: your instructor's run is the one that counts.")
    return ", and the timings", f"\n## Performance feedback\n\n{textwrap.fill(text, width=95)}\n"


def readme_text(course: Course) -> str:
    from grader import repro

    rows = "\n".join(f"| {a.name} | {a.title} | {', '.join(f'`{c.name}`' for c in a.components)} |"
                     for a in course.assignments.values())
    stored = [check for a in course.assignments for check in repro.stored_cases(course, a)]
    ids = {chk.id for a in course.assignments.values() for comp in a.components for chk in comp.checks}
    examples = [f"`{check}`" for check in repro.EXAMPLES if check in ids]
    timings, performance = _performance_text(course)
    return README.format(name=course.name, assignments=rows, torch=torch_version(), timings=timings,
                         performance=performance, stored="`*_matches_stored_reference`" if stored else "none here",
                         examples=", ".join(examples) or "no other")

