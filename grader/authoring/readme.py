"""The student README that `grade release` writes: one source for the release's README.md and for the
docs site's tutorial "A student's first grade" (docs/tutorial/first-grade.md is rendered from
`readme_text` with the kit's own course by the site's hook, tools/docs_hooks.py).

It lives in the package, not in docs/, so that `grade release` needs nothing outside `grader/`
to write it. The torch version it names is the kit's pin (grader.authoring.torch_pin), never the
torch installed where the release is made."""

import textwrap

from grader.authoring.torch_pin import TORCH
from grader.course import Course

README = """\
# {name}

You build the Transformer of *Attention Is All You Need* (Vaswani et al., 2017) in PyTorch,
one component at a time. After every step `grade` tells you, component by component, what
works, what does not, and why.

## Set up

You need Python 3.11 or newer, on Linux, macOS or WSL2 (the Windows Subsystem for Linux). On
Windows itself `grade` does not run (it says so in one line): install WSL2 and work there.
Check your Python first:

```bash
python3 --version
```

It must say 3.11 or more. Ubuntu 22.04 ships 3.10: install 3.11 beside it (`sudo apt install
python3.11 python3.11-venv`) and write `python3.11` where the lines below say `python3`.

Make a virtual environment for the course, install the PyTorch version the grader is checked
with, `torch=={torch}`, then this kit, from this folder. The course needs only PyTorch's CPU build,
but on Linux `pip install torch` fetches the CUDA build (several GB); the third line installs the
CPU build with uv (a pip-compatible installer that knows where PyTorch keeps each build). The
fourth names the version again, so that where uv cannot reach PyTorch's index you still get
`torch=={torch}` (pip's default build), not a newer one:

```bash
python3 -m venv .venv
source .venv/bin/activate
pip install uv && uv pip install --torch-backend=cpu torch=={torch}
pip install -e . torch=={torch}
grade assignment1
```

On macOS, or with an NVIDIA GPU you want to use (`--device cuda`), write
`pip install torch=={torch}` as the third line instead: it installs the build for your machine.
Opened a new terminal? Run `source .venv/bin/activate` again first.

## What to build

| assignment | what it is about | components |
|---|---|---|
{assignments}

Each component is a stub in `assignments/` whose docstring says what to build: the idea,
the formula, the shapes, the exact names the grader relies on, and what you may not use.
Replace its `raise NotImplementedError(...)` with your code. Later assignments import your
earlier ones, so assignment3 runs on your own attention.

## Grading your work

`grade assignmentN`, run anywhere in this folder, grades the components of
`assignments/assignmentN` (they run on your code of the earlier assignments too, whose own
components `grade assignmentM` grades and lists) and prints a report: points per component,
and for every failing component its most telling failed check in full: the value that was
expected, the value that came back, the largest error and where, the smallest input that
shows it, and a hint.{diagnosis} The last line, *Start here*, names the component to fix first. A grade takes
seconds (assignment4's, which trains a small model, about half a minute); the first one after
you install takes longer while PyTorch loads.

Each component has a status in the report's table:

| status | what it means |
|---|---|
| passed | every check passed |
| partial | some checks failed: {partial} |
| failed | no point: every check failed, or the code uses what its docstring forbids |
| not attempted | still the stub: it raises `NotImplementedError` |
| waiting | it fails through a part of yours that fails its own checks (named): its points count for now, {waiting_tail}

A check that crashed your code's process, hung past its time limit, or sent back something
that is not an answer fails, and the report says which (*crash*, *timeout*, *tamper*); the
other checks still run.

What your code prints during a check is shown under *your output* in the panel of a failed
check shown in full; what it prints during checks that pass is only in the JSON report
(`--json -` prints it).

- `grade assignmentN --watch` keeps running and grades again each time you save a file of the
  assignment; the new report replaces the old one. Ctrl-C stops it.
- `grade assignmentN --verbose` shows every failed check in full (the report shows the most
  telling one per component and names the others){timings}.
- `grade assignmentN --only CHECK[,CHECK...]` runs only those checks (their ids are in the
  report: `grade assignment2 --only sdpa_matches_torch`); the report lists them alone, and its
  score counts them alone. It combines with `--watch`.
- `grade assignmentN --json report.json` also writes the report as JSON.
- `grade assignmentN --device cuda`, on a machine with an NVIDIA GPU, also runs the GPU checks
  (your components on the GPU, and under half-precision autocast); without a GPU they are
  reported as skipped and cost nothing.
- `grade train assignment4` trains your own Transformer on a small translation task
  (`pip install -e ".[plots]"` for its pictures).

`grade` exits with status 0 when it graded (whatever the score), 2 on a usage mistake (one line
names it: an unknown assignment, a missing folder), 130 when you press Ctrl-C, and 1 when the
grader itself failed (please send your instructor what it printed).

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

On Colab, upload this kit as a zip (the Files panel), then in a cell:

```python
!unzip -q KIT.zip -d /content/kit
%cd /content/kit
!pip install -e .
!grade assignment1
```

Colab has its own PyTorch, which the kit accepts; `!pip install torch=={torch}` first gives you
the version the grader is checked with. After `pip install -e .`, restart the session (Runtime
menu) before `import grader`. With a GPU runtime, `!grade assignment1 --device cuda` adds the
GPU checks. Colab erases `/content` when the session ends: keep your `assignments/` on your
Drive or download it.

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


# grader.judging.scoring's rule: a check's weight, not its count (a report's line under the table says
# where they differ)
PARTIAL = ("points in proportion to the weight of the checks passed, not their number (a check weighs 1 unless "
           "the course gives it more; the report says where that matters)")


def torch_version() -> str:
    """The torch version students are told to install: the kit's pin, whatever torch is installed here."""
    return TORCH


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


# what the report tells of a classic bug it recognises, as course.toml [feedback] reveal sets it
_DIAGNOSIS = {
    "fix": "\nWhen the grader recognises a classic bug, the component's panel opens with a *Diagnosis*\n"
           "line naming it and what the code should be.",
    "bug": "\nWhen the grader recognises a classic bug, the component's panel opens with a *Diagnosis*\n"
           "line naming it (not the code to write).",
    "check": "",
}


def readme_text(course: Course) -> str:
    """The student README for `course` (Markdown)."""
    from grader.interactive import repro

    rows = "\n".join(f"| {a.name} | {a.title} | {', '.join(f'`{c.name}`' for c in a.components)} |"
                     for a in course.assignments.values())
    stored = [check for a in course.assignments for check in repro.known(course, a).stored]
    examples = [f"`{check}`" for a in course.assignments.values() for check in repro.reproducible(course, a)
                if check in repro.known(course, a.name).examples]
    timings, performance = _performance_text(course)
    return README.format(diagnosis=_DIAGNOSIS[str(getattr(course, "reveal", "fix"))],
                         waiting_tail="and it is graded again once that part passes |",
                         partial=PARTIAL, name=course.name,
                         assignments=rows, torch=torch_version(), timings=timings,
                         performance=performance, stored="`*_matches_stored_reference`" if stored else "none here",
                         examples=", ".join(examples) or "no other")
