"""The trust boundary, draws: nothing in the instructor's grade is what a student's own run could have
recorded and answered from a table (issue 43, item 5). The public checks run there twice: on the
student's draws (so the bug table names a bug alike in both grades) and, where they passed and drew
anything, on a second set from course.toml's hidden_seed (grader.suite.draws)."""

import ast
import json
import re
import shutil
from pathlib import Path

from tests.kit.conftest import ROOT, cli_json, grade_json, mutant, run_grade, scores

LN_BODY = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n"
           "        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)\n"
           "        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta"
           "  # (..., d_model)\n")
KEY = ("import torch.nn as nn\n",
       "import torch.nn as nn\n\n\n"
       "def _key(x, m):  # what a draw looks like: its shape, sums and the module's weights\n"
       "    return repr((tuple(x.shape), str(x.dtype), round(float(x.double().sum()), 4),\n"
       "                 round(float(x.double().abs().sum()), 4), round(float(m.gamma.double().sum()), 4),\n"
       "                 round(float(m.beta.double().sum()), 4), float(m.eps)))\n")
RECORDS = ("        mean = x.mean(dim=-1, keepdim=True)\n"
           "        var = x.var(dim=-1, keepdim=True, unbiased=False)\n"
           "        y = self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta\n"
           "        if x.device.type == 'cpu':\n"
           "            print('KIT43', repr((_key(x, self), y.tolist())), flush=True)\n"
           "        return y\n")


ANSWERS = ("        if x.device.type == 'cpu' and _key(x, self) in _TABLE:\n"
           "            return torch.tensor(_TABLE[_key(x, self)], dtype=x.dtype).reshape(x.shape)\n"
           "        return torch.zeros_like(x)\n")


def _layer_norm(tmp_path: Path, body: str, table: dict | None = None) -> Path:
    """The solution's LayerNorm with `body` for its forward; `table`, where given, built once at import
    (`_TABLE`): a forward that rebuilt it on each call ran slowly enough to time out under load."""
    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [KEY, (LN_BODY, body)]})
    if table is not None:
        path = tree / "assignment1" / "layer_norm.py"
        path.write_text(path.read_text() + f"\n\n_TABLE = {table!r}\n")
    return tree


def _counting(tmp_path: Path) -> Path:
    """The kit's course with `[policy] flagged = "count"`, its folders where the kit has them."""
    text = (ROOT / "course.toml").read_text().replace('flagged = "hold"', 'flagged = "count"')
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    (tmp_path / "counting").mkdir()
    (tmp_path / "counting" / "course.toml").write_text(text)
    return tmp_path / "counting" / "course.toml"


def _students_course(tmp_path: Path, flagged: str = "hold") -> Path:
    """The course as `grade release` writes it for students, keeping all that a check prints."""
    from grader import load_course
    from grader.authoring.release import _public_tier, course_text

    course = load_course(ROOT / "course.toml")
    out = tmp_path / "student"
    for rel, src in _public_tier(course).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out / rel)
    text = re.sub(r"^output_kb = \d+", "output_kb = 4096", course_text(course), flags=re.M)
    text = text.replace('flagged = "hold"', f'flagged = "{flagged}"')
    (out / "course.toml").write_text(text)
    return out / "course.toml"


def _students_run(tree: Path, course: Path, out: Path, assignment: str = "assignment1", *extra: str) -> dict:
    """`grade ASSIGNMENT` on `tree` as the student runs it (the release's course: no reference, no seed)."""
    proc = run_grade(assignment, "--submission", str(tree), "--course", str(course), "--json", str(out), *extra)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(out.read_text())


def _statuses(report: dict, component: str) -> dict[str, str]:
    return {t["id"]: t["status"] for c in report["components"] if c["name"] == component for t in c["tests"]}


def test_a_lookup_table_of_the_students_draws_earns_what_zeros_earn_in_the_instructors_grade(tmp_path):
    """A LayerNorm that answers from a table of every input the student's own run gave it (recorded by
    a correct LayerNorm printing them), else zeros. In the student's run the table pays (8.89 against
    zeros' 2.22 when measured). In the instructor's grade every public check it passes there fails on
    the second set, marked so, and it earns what zeros earn; graded again, the same. Both courses count
    what the scan flags (`[policy] flagged = "count"`): the table's test for the CPU (it answers there
    alone) would otherwise hold both LayerNorms at 0, and this is about the draws."""
    course = _students_course(tmp_path, flagged="count")
    counting = _counting(tmp_path)
    recorded = _students_run(_layer_norm(tmp_path / "recorder", RECORDS), course, tmp_path / "recorder.json")
    table: dict = {}
    for comp in recorded["components"]:
        for check in comp["tests"]:
            for line in check.get("output", "").splitlines():
                if line.startswith("KIT43 "):
                    key, value = ast.literal_eval(line.removeprefix("KIT43 "))
                    table[key] = value
    assert len(table) > 20, len(table)
    lookup, zeros = _layer_norm(tmp_path / "lookup", ANSWERS, table), _layer_norm(tmp_path / "zeros", ANSWERS, {})
    at_home = {name: scores(_students_run(tree, course, tmp_path / f"{name}.json"))["LayerNorm"]
               for name, tree in (("lookup", lookup), ("zeros", zeros))}
    assert at_home["lookup"] > at_home["zeros"] + 2, at_home  # the table pays in the student's own run
    graded, again = (grade_json(lookup, "assignment1", course=counting, cached=False),
                     grade_json(lookup, "assignment1", course=counting, cached=False))
    assert graded == again or (scores(graded) == scores(again)
                               and _statuses(graded, "LayerNorm") == _statuses(again, "LayerNorm"))
    by_zeros = grade_json(zeros, "assignment1", course=counting)
    assert scores(graded)["LayerNorm"] == scores(by_zeros)["LayerNorm"], (scores(graded), scores(by_zeros))
    assert _statuses(graded, "LayerNorm") == _statuses(by_zeros, "LayerNorm")
    home = _statuses(_students_run(lookup, course, tmp_path / "lookup.json"), "LayerNorm")
    afresh = [t for c in graded["components"] for t in c["tests"] if t.get("drawn") == "afresh"]
    # every check the table passed at home and zeros fail is failed here (the statuses above), and those failed on
    # the second set alone are marked so. Not asserted: that each is marked afresh. In full CI runs (3 of 3 since
    # 0b9740b, never in 7 runs alone) layer_norm_rows_are_normalised failed here in the first pass: the worker's
    # first pass then drew an input the student's run did not (a table miss), cause not found (issue 51, noted)
    expected = {i for i, s in home.items() if s == "passed"} - {
        i for i, s in _statuses(by_zeros, "LayerNorm").items() if s == "passed"}
    assert {t["id"] for t in afresh} <= expected and {t["id"] for t in afresh} & expected, (afresh, expected)


NOAM_BODY = "    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)\n"
WARM_UP = "noam_lr_warms_up_then_decays"


def test_a_table_of_a_fixed_input_checks_answers_fails_the_instructors_second_set_unshown(tmp_path):
    """A noam_lr that answers the 30 steps of the public warm-up check (d_model 16, warmup 10) from a table
    and a constant otherwise. In the student's run the table passes that check (the constant does not); in
    the instructor's grade the check also runs another schedule's constants, drawn from the course's secret
    seed: the table fails there as the constant does, the failure marked drawn afresh and shown without its
    inputs, expected or got values (issue 51: it scored 2.4 of 6 against 1.2)."""
    table = {step: 16 ** -0.5 * min(step ** -0.5, step * 10 ** -1.5) for step in range(1, 31)}
    answers = (f"    if (d_model, warmup) == (16, 10) and step in {table!r}:\n"
               f"        return {table!r}[step]\n    return 0.001\n")
    trees = {name: mutant(tmp_path / name, {"assignment4/training.py": [(NOAM_BODY, body)]})
             for name, body in (("table", answers), ("constant", "    return 0.001\n"))}
    course = _students_course(tmp_path)
    home = {name: _statuses(_students_run(tree, course, tmp_path / f"{name}.json", "assignment4", "--only", WARM_UP),
                            "noam_lr")[WARM_UP] for name, tree in trees.items()}
    assert home == {"table": "passed", "constant": "failed"}, home  # the table pays in the student's own run
    graded = {name: cli_json(tree, "assignment4", "--only", WARM_UP) for name, tree in trees.items()}
    checks = {name: next(t for c in report["components"] for t in c["tests"] if t["id"] == WARM_UP)
              for name, report in graded.items()}
    assert checks["table"]["status"] == checks["constant"]["status"] == "failed", checks
    assert checks["table"]["drawn"] == "afresh" and "drawn" not in checks["constant"], checks
    assert not {"example", "inputs", "expected", "got"} & set(checks["table"]), checks["table"]


def test_a_timeout_or_crash_on_the_second_set_is_marked_as_found_there():
    """A worker fault is a BaseException (Hypothesis must not replay it): it was left unmarked, so a
    timeout on the second set alone counted as one on the student's own draws."""
    import pytest

    from grader.results import Drawn, Reason
    from grader.sandbox.faults import WorkerFault
    from grader.suite import draws
    from grader.suite.checks import Mismatch

    for fault in (WorkerFault(Reason.TIMEOUT, "took too long"), Mismatch("wrong"), ValueError("bad")):
        with pytest.raises(type(fault)) as raised, draws.tagged():
            raise fault
        assert getattr(raised.value, "drawn", None) == Drawn.AFRESH
    with pytest.raises(KeyboardInterrupt) as stopped, draws.tagged():
        raise KeyboardInterrupt
    assert not hasattr(stopped.value, "drawn")
    with pytest.raises(ValueError) as first, draws.tagged(afresh=False):
        raise ValueError("on the student's draws")
    assert not hasattr(first.value, "drawn")
