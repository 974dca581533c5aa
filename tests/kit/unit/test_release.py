"""`grade release`'s student kit holds no solution code: the audit finds shipped code that does a
component's job (the kit's own library and the public checks' helpers do not), and `grade nbgrader`'s
folders ship the bug table in the release's student form (the release made and installed:
tests/kit/sandbox/test_release.py)."""

import dataclasses
import json
import shutil

import pytest

from grader.gradebook import public
from grader.judging import diagnosis
from grader.reveal import Reveal
from tests.kit.conftest import ROOT
from tests.kit.kit_course import COURSE
from tests.kit.release_bug_table import BUGS_JSON, TABLE

pytestmark = pytest.mark.xdist_group("release")  # one release and one venv, built once


@pytest.mark.parametrize("level", list(Reveal))
def test_nbgraders_public_course_ships_the_bug_table_in_the_same_student_form(level):
    """`grade nbgrader`'s folder per assignment (grader.gradebook.public) cuts the table to the
    assignment's components and writes it as `grade release` does."""
    course = dataclasses.replace(COURSE, reveal=level)
    shipped = json.loads(public.files(course, "assignment1")[BUGS_JSON.as_posix()])
    components = {c.name for c in COURSE.assignment("assignment1").components}
    assert shipped == diagnosis.student_form({k: v for k, v in TABLE.items() if v["component"] in components}, level)
    assert all(("fix" in e) is (level is Reveal.FIX) for e in shipped["bugs"].values())


# the kit's greedy decoding as `grade release` shipped it before issue 51 (grader/training/library.py)
GREEDY_BY_FORWARD = '''
def greedy_by_forward(model, src: torch.Tensor, max_len: int, sos_idx: int, eos_idx: int) -> torch.Tensor:
    """Greedy decoding as greedy_decode's contract defines it, through model(src, ys) alone: the
    kit's own, for the end-to-end check, which grades training and not the tree's greedy_decode."""
    model.eval()
    with torch.no_grad():
        ys = torch.full((src.size(0), 1), sos_idx, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while ys.size(1) < max_len and not done.all():
            nxt = model(src, ys)[:, -1].argmax(-1).masked_fill(done, model.pad_idx)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == eos_idx
    return ys
'''


def test_the_audit_finds_shipped_code_that_does_a_components_job(tmp_path):
    """A helper outside assignments/ that shares code with a solution beyond its stub (the kit's own greedy
    decoding, which pasted into greedy_decode scored 10/10) fails the release; the kit's own library and
    the public checks' helpers, as they ship now, do not (grader.batch.similarity's fingerprints)."""
    from grader.authoring.audit import shared_code

    for rel in ("grader/training/library.py", "tests/grading/helpers/training.py", "tests/grading/helpers/oracles.py",
                "grader/sandbox/child/fixtures.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    assert shared_code(tmp_path, COURSE) == []
    library = tmp_path / "grader/training/library.py"
    library.write_text(library.read_text() + GREEDY_BY_FORWARD)
    found = shared_code(tmp_path, COURSE)
    assert len(found) == 1 and found[0].startswith("grader/training/library.py shares") \
        and "assignment4/decoding.py" in found[0], found
    assert "greedy_by_forward" not in (ROOT / "grader/training/library.py").read_text()
