"""What `grade release` tells students: how to set up, grade, debug and use a notebook (a pure function of
the course: no release is built here; the performance feedback: tests/kit/unit/test_student_readme.py)."""

import re

from grader.authoring.readme import readme_text
from grader.authoring.torch_pin import TORCH
from grader.interactive import repro
from tests.kit.kit_course import COURSE


def test_student_readme_says_how_to_set_up_grade_and_debug():
    text = readme_text(COURSE)
    # the kit's pin (what CI installs), not the torch here; its CPU build as a command, before the kit's install
    cpu = f"pip install uv && uv pip install --torch-backend=cpu torch=={TORCH}\npip install -e . torch=={TORCH}\n"
    assert cpu in text and "CPU_INDEX" not in text
    assert f"`pip install torch=={TORCH}` as the third line instead" in text  # the build for a GPU or a Mac
    for words in ("python3 -m venv .venv", "source .venv/bin/activate", "pip install -e .",
                  "grade assignmentN --watch", "grade assignmentN --verbose", "grade assignmentN --only CHECK",
                  "grade assignmentN --repro CHECK", "python -m pdb repro_CHECK.py", 'grader.check("assignment1")',
                  "Linux, macOS or WSL2", "On\nWindows", "python3 --version", "Ubuntu 22.04", "Colab",
                  "grade assignmentN --device cuda", "| waiting |", "| not attempted |", "status 0", "130"):
        assert words in text, words
    # printed output: in the panel of a failed check shown in full, else only in the JSON (as the kit's docs say)
    flat = " ".join(text.split())
    assert "shown under *your output* in the panel of a failed check shown in full" in flat
    assert "only in the JSON report" in flat
    # every check the README offers to reproduce is one --repro knows
    offered = set(re.findall(r"`(\w+)`", text.split("## Debugging a failed check")[1].split("##")[0]))
    known = {check for a in COURSE.assignments.values() for check in repro.reproducible(COURSE, a)}
    assert {"sdpa_matches_torch", "noam_lr_matches_formula"} <= offered <= known, offered - known
