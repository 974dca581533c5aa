"""The stubs hold no solution code, and course.toml matches the suites: every check it lists is a test,
and every test is graded."""

import ast

from grader import course as config
from tests.kit.conftest import ROOT


def test_stubs_hold_no_solution_code():
    course = config.load(ROOT / "course.toml")
    for assignment in course.assignments.values():
        for name in assignment.files:
            stub = course.assignments_dir / assignment.name / name
            solution = course.reference / assignment.name / name
            text = stub.read_text()
            assert "### BEGIN SOLUTION" not in text, stub
            ref_lines = {line.strip() for line in solution.read_text().splitlines()}
            body = _solution_lines(solution)
            leaked = [line for line in body if line in {s.strip() for s in text.splitlines()}
                      and len(line) > 25 and line in ref_lines]
            assert not leaked, f"{stub} holds solution code: {leaked[:3]}"
            for fn in ast.walk(ast.parse(text)):
                if isinstance(fn, ast.FunctionDef) and _has_todo(fn):
                    raises = [n for n in ast.walk(fn) if isinstance(n, ast.Raise)]
                    message = f"{assignment.name}: "
                    assert any(message in ast.unparse(r) for r in raises), f"{stub}: {fn.name} raises no named TODO"


def _solution_lines(path):
    lines, inside = [], False
    for line in path.read_text().splitlines():
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside and line.strip() and not line.strip().startswith("#"):
            lines.append(line.strip())
    return lines


def _has_todo(fn):
    return any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(fn))


# That the stored expected outputs are up to date (`grade expected --check` finds nothing stale) is
# tests/kit/sandbox/test_release.py::test_stored_expected_outputs_are_up_to_date: `grade release` runs the same
# check (grader.authoring.expected.write_all(check=True)) before it writes anything, and grading every
# table bug for it costs a minute of CI, once is enough.


def test_every_check_in_course_toml_is_a_test_and_every_test_is_graded():
    course = config.load(ROOT / "course.toml")
    for assignment in course.assignments.values():
        listed = {(chk.tier, chk.id) for comp in assignment.components for chk in comp.checks}
        found = set()
        for tier in ("public", "hidden", "cuda"):
            path = course.suites / tier / f"test_{assignment.name}.py"
            if path.exists():
                tree = ast.parse(path.read_text())
                found |= {(tier, f.name.removeprefix("test_")) for f in tree.body
                          if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")}
        assert listed == found, (f"{assignment.name}: listed but not defined: {sorted(listed - found)}; "
                                 f"defined but not graded: {sorted(found - listed)}")
