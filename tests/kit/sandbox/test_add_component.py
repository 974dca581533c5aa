"""README's "Add a component", followed step by step on a copy of the course: RMSNorm joins assignment1
(the solution between the markers, course.toml, public and hidden checks through the `student` fixture,
a stored case, a classic-bug entry), then `grade stubs`, `grade expected`, and the real `grade` CLI
grades the solution (full marks), the bug (named on RMSNorm) and a correct variant (full marks).

The copy's bug table holds the new entry alone: `grade expected` grades every entry, and the kit's own
are graded by its own tests (test_assignmentN.py); the step is the same."""

import json
import shutil
from pathlib import Path

from tests.kit.conftest import ROOT, run_grade

# step 1: the solution, its contract in the docstring and the students' part between the markers
SOLUTION = '''"""Root-mean-square normalisation (Zhang and Sennrich, 2019): LayerNorm without the mean."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight, over the last dimension.

    Shapes: x (..., d_model) -> (..., d_model).

    The grader relies on these names:
        weight  nn.Parameter of shape (d_model,), initialised to ones
        eps     the float added inside the square root (default 1e-6)

    A d_model below 1 raises ValueError naming d_model.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model < 1:
            raise ValueError(f"d_model must be at least 1, got {d_model}")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x / rms * self.weight  # (..., d_model)
        ### END SOLUTION
'''

# step 2: course.toml
COURSE = '''
[assignment1.RMSNorm]
file = "rms_norm.py"
points = 4
public = ["rms_norm_matches_formula", "rms_norm_matches_stored_reference", "rms_norm_rows_have_unit_rms",
          "rms_norm_rejects_d_model_below_1"]
hidden = ["rms_norm_matches_reference"]
weights = { rms_norm_matches_formula = 2 }
'''

# step 3: the checks, one per id, through the `student` fixture: against a formula, by a property,
# by a failure mode; and against the live reference in the hidden tier
PUBLIC = '''

# RMSNorm ----------------------------------------------------------------------------------

RMS_NORM = "assignment1.rms_norm:RMSNorm"


@given(a=s.activations())
def test_rms_norm_matches_formula(student, a):
    weight = s.tensor([a.d_model], a.seed + 1)
    m = student.new(RMS_NORM, a.d_model).load({"weight": weight}, "RMSNorm")
    expected = a.x / torch.sqrt(a.x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    assert_close(m(a.x), expected, name="RMSNorm output", example=describe(x=a.x, weight=weight), atol=1e-4,
                 hint="x / sqrt(mean(x^2) + eps) * weight, over the last dimension.")


def test_rms_norm_matches_stored_reference(student):
    check_stored(student, "assignment1", "rms_norm")


@given(a=s.activations())
def test_rms_norm_rows_have_unit_rms(student, a):
    y = expect_tensor(student.new(RMS_NORM, a.d_model)(a.x), name="RMSNorm output", shape=a.x.shape,
                      dtype=torch.float32, example=describe(x=a.x))
    rms = y.double().pow(2).mean(-1).sqrt()
    assert_close(rms, torch.ones_like(rms), name="root mean square of each output row", atol=1e-3, rtol=0,
                 example=describe(x=a.x), hint="With weight = 1 every row of the output has an RMS of 1.")


def test_rms_norm_rejects_d_model_below_1(student):
    expect_error(lambda: student.new(RMS_NORM, 0), kind="ValueError", names=[0], example=describe(d_model=0),
                 hint="Raise ValueError naming d_model when it is below 1.")
'''
HIDDEN = '''

@given(a=s.activations())
def test_rms_norm_matches_reference(student, reference, a):
    check_reference(student, reference, "assignment1.rms_norm:RMSNorm", (a.d_model,), {"x": a.x}, seed=a.seed,
                    atol=1e-4)
'''
# step 4: a fixed case whose reference output ships with the public tier
CASE = '''
CASES.append(Case("rms_norm", "assignment1.rms_norm:RMSNorm", (12,), _x(2, 5, 12)))
'''
# step 5: a classic bug, the reference with one patch (after the table's helpers: `_one`, `Bug`)
BUG = '''
BUGS = {"rms_norm_divides_by_the_mean_square": _one(
    "RMSNorm", "assignment1/rms_norm.py", "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
    "(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)", "RMSNorm divided by the mean square, not its root",
    "divide by torch.sqrt(mean(x^2) + eps)")}
'''
# a correct solution written differently: rsqrt, the weight first
VARIANT = ("        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)\n"
           "        return x / rms * self.weight  # (..., d_model)\n",
           "        return self.weight * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps))\n")
CHECKS = "rms_norm_matches_formula,rms_norm_matches_stored_reference,rms_norm_rows_have_unit_rms," \
         "rms_norm_rejects_d_model_below_1,rms_norm_matches_reference"


def copy_course(into: Path) -> Path:
    """The kit's course, as an instructor's checkout holds it: course.toml, the solutions, the student
    tree, and the suites with the helpers they import."""
    skip = shutil.ignore_patterns("__pycache__")
    for part in ("solutions", "assignments", "tests/grading"):
        shutil.copytree(ROOT / part, into / part, ignore=skip)
    for part in ("course.toml", "tests/__init__.py", "tests/strategies.py"):
        shutil.copy(ROOT / part, into / part)
    return into / "course.toml"


def grade_json(course: Path, tree: Path, *only: str) -> dict:
    proc = run_grade("assignment1", "--submission", str(tree), *only, "--json", "-", "--course", str(course),
                     cwd=course.parent)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(proc.stdout)


def test_a_component_added_as_the_readme_says_is_graded_and_its_bug_named(tmp_path):
    course = copy_course(tmp_path / "course")
    root = course.parent
    (root / "solutions/assignment1/rms_norm.py").write_text(SOLUTION)
    text = course.read_text()
    files = 'files = ["layer_norm.py", "feed_forward.py", "embedding.py", "positional_encoding.py"]'
    assert text.count(files) == 1 and text.count("\n[assignment2]\n") == 1
    text = text.replace(files, files.replace('"]', '", "rms_norm.py"]'))
    text = text.replace("\n[assignment2]\n", COURSE + "\n[assignment2]\n")
    # fewer examples per check than the course's 8 (a setting of course.toml): a quicker test, the same steps
    assert text.count("max_examples = 8") == 1
    course.write_text(text.replace("max_examples = 8", "max_examples = 3"))
    suites = root / "tests/grading"
    with open(suites / "public/test_assignment1.py", "a") as f:
        f.write(PUBLIC)
    with open(suites / "hidden/test_assignment1.py", "a") as f:
        f.write(HIDDEN)
    with open(suites / "cases/assignment1.py", "a") as f:
        f.write(CASE)
    helpers = (suites / "bugs.py").read_text().split("\nBUGS: ")[0]  # the table's own entries stay out
    (suites / "bugs.py").write_text(helpers + BUG)

    stubs = run_grade("stubs", "--course", str(course), cwd=root)
    assert stubs.returncode == 0, stubs.stdout + stubs.stderr
    stub = (root / "assignments/assignment1/rms_norm.py").read_text()
    assert 'raise NotImplementedError("assignment1: RMSNorm.forward")' in stub and "torch.sqrt" not in stub

    # one run: the new case's stored output is written before the bug is graded by the checks that read it
    # (the bug named below matches what bugs.json holds; an error recorded there would not match)
    expected = run_grade("expected", "--course", str(course), cwd=root)
    assert expected.returncode == 0, expected.stdout + expected.stderr
    table = json.loads((suites / "public/expected/bugs.json").read_text())
    assert list(table) == ["rms_norm_divides_by_the_mean_square"]
    assert set(table["rms_norm_divides_by_the_mean_square"]["failing"]) == {
        "rms_norm_matches_formula", "rms_norm_matches_stored_reference", "rms_norm_rows_have_unit_rms"}

    def rms_norm(report: dict) -> dict:
        [component] = [c for c in report["components"] if c["name"] == "RMSNorm"]
        assert len(component["tests"]) == 5
        return component

    solved = rms_norm(grade_json(course, root / "solutions", "--only", CHECKS))
    assert solved["score"] == solved["max_score"] == 4, solved

    bug = shutil.copytree(root / "solutions", tmp_path / "bug")
    path = bug / "assignment1/rms_norm.py"
    path.write_text(path.read_text().replace("torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                                             "(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"))
    # graded in full: the report names a bug from all of a component's public checks, which --only may leave out
    report = grade_json(course, bug)
    assert [c["name"] for c in report["components"] if c["score"] < c["max_score"]] == ["RMSNorm"]
    broken = rms_norm(report)
    assert broken["diagnosis"]["bug"] == "rms_norm_divides_by_the_mean_square", broken

    variant = shutil.copytree(root / "solutions", tmp_path / "variant")
    path = variant / "assignment1/rms_norm.py"
    assert path.read_text().count(VARIANT[0]) == 1
    path.write_text(path.read_text().replace(*VARIANT))
    written_differently = rms_norm(grade_json(course, variant, "--only", CHECKS))
    assert written_differently["score"] == 4 and not written_differently["diagnosis"], written_differently
