"""The same submission always gets the same grade: same JSON, timings aside, however it is run."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import load_course
from grader.grading.split import split as split_at
from grader.grading.warm import Grader
from tests.kit.conftest import ROOT, SOLUTIONS, as_json, grade_json, mutant
from tests.kit.mutants import patches

BUGS = ("layer_norm_eps_outside_sqrt", "token_embedding_no_scale")  # failures, shrinking, excused checks
SPLIT_BUGS = ("layer_norm_eps_outside_sqrt", "transformer_embedding_no_position")  # the first component, the last

# the warm grader (a worker forked from a template, the grader's imports kept) after another submission
TWO_IN_ONE_PROCESS = """
import json, sys
from grader import load_course
from grader.results import to_json
from grader.grading.split import split as split_at
from grader.grading.warm import Grader
with Grader(load_course(sys.argv[1])) as grader:
    grader.grade(assignment=grader.course.assignment("assignment1"), submission=sys.argv[2])  # another one first
    print(json.dumps(to_json(grader.grade(assignment=grader.course.assignment("assignment1"), submission=sys.argv[3]))))
"""

# A short deadline is measured (three times the component's slowest answer, or the grading's median,
# at least 0.25 s: grader.suite.remote), so on a loaded machine it is a timing too: 0.26 s in one
# process, 0.25 s in another
SHORT = re.compile(r"within \d+(?:\.\d+)? s( while running your code \([^)]*\) \(shortened)")


def without_timings(report: dict) -> dict:
    report = {k: v for k, v in report.items() if k not in ("duration_seconds", "performance")}
    report["notes"] = [SHORT.sub(r"within (a short deadline)\1", note) for note in report.get("notes", [])]
    report["noted"] = [{**n, "detail": SHORT.sub(r"within (a short deadline)\1", n["detail"])}
                       for n in report.get("noted", [])]
    for component in report["components"]:
        for check in component["tests"]:
            check.pop("duration_seconds", None)
            if isinstance(check.get("message"), str):
                check["message"] = SHORT.sub(r"within (a short deadline)\1", check["message"])
    return report


def test_a_grade_does_not_depend_on_how_or_where_it_is_run(tmp_path):
    tree = mutant(tmp_path / "graded", patches(*BUGS))
    other = mutant(tmp_path / "other", patches("feed_forward_no_relu"))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    runs = {}
    for name, cwd, extra in (("here", ROOT, {}), ("elsewhere, CI set", tmp_path, {"CI": "true"}),
                             ("another hash seed", tmp_path, {"PYTHONHASHSEED": "12345"})):
        proc = subprocess.run([sys.executable, "-m", "grader", "assignment1", "--submission", str(tree),
                               "--json", "-", "--course", str(ROOT / "course.toml")], cwd=cwd,
                              env={**env, "NO_COLOR": "1", **extra}, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[name] = without_timings(json.loads(proc.stdout))
    proc = subprocess.run([sys.executable, "-c", TWO_IN_ONE_PROCESS, str(ROOT / "course.toml"), str(other), str(tree)],
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs["warm, after another submission"] = without_timings(json.loads(proc.stdout.splitlines()[-1]))
    runs["warm, in the kit's own test process"] = without_timings(grade_json(tree, "assignment1", cached=False))
    first = runs["here"]
    assert first["score"] < first["max_score"]  # the case is not trivial
    for name, report in runs.items():
        assert report == first, f"{name}: the JSON differs from a plain run"



def _exits(status: int) -> str:
    return f"        import os; os._exit({status})\n"


# the process dies in the first component's checks and in the last's, each its own way: the notes
# list the restarts in the order of a single run
CRASHES = {"assignment1/layer_norm.py": [("        mean = x.mean(dim=-1, keepdim=True)",
                                          _exits(3) + "        mean = x.mean(dim=-1, keepdim=True)")],
           "assignment1/positional_encoding.py": [("        return self.dropout(",
                                                   _exits(4) + "        return self.dropout(")]}


@pytest.fixture(scope="module")
def watching(quick_course):
    """A grader as `grade --watch` starts it: a helper grader on a second core (grader.grading.split), and
    the results of components whose files did not change kept (grader.grading.reuse); warmed up."""
    with Grader(load_course(quick_course), helper=True, reuse=True) as grader:
        grader.grade(assignment=grader.course.assignment("assignment1"), submission=SOLUTIONS)
        assert grader.await_helper(300), "the helper did not warm up"
        yield grader


@pytest.mark.xdist_group("watching")
def test_a_grade_split_across_two_grader_processes_is_the_grade_of_one(tmp_path, watching, quick_course):
    """`grade --watch`'s helper (grader.grading.split) grades the later checks in a process of its own:
    the JSON is one grader's, failures, attribution on the reference's parts, shrinking and the
    restarts of the submission's process included."""
    trees = [mutant(tmp_path / "bugs", patches(*SPLIT_BUGS)), mutant(tmp_path / "crashes", CRASHES)]
    before = watching.split_gradings
    a1 = watching.course.assignment("assignment1")
    split = [without_timings(as_json(watching.grade(assignment=a1, submission=t))) for t in trees]
    assert watching.split_gradings == before + 2
    for tree, report in zip(trees, split, strict=True):
        one = without_timings(grade_json(tree, "assignment1", course=quick_course, cached=False))
        assert one["score"] < one["max_score"]  # the case is not trivial
        assert report == one, tree.name
    assert len(set(split[1]["notes"])) == 2  # both ways of dying are among the notes


@pytest.mark.xdist_group("watching")
def test_a_component_cut_in_two_that_hangs_on_both_sides_is_graded_as_in_one_process(tmp_path, watching,
                                                                                     quick_course):
    """Once a component has hung, its later checks get a short deadline (grader.suite.remote): where
    the cut between the two processes falls inside it and it hangs on both sides, its checks run
    again in one process, and the JSON is one process's, deadlines and restarts included."""
    forward = "        T = x.size(1)\n"
    # the loop on one line: the line a hang is reported at is the same whenever the stack is taken
    tree = mutant(tmp_path, {"assignment1/positional_encoding.py": [
        (forward, "        while self.training: pass\n" + forward)]})
    components = [(c.name, [k.id for k in c.checks]) for c in watching.course.assignment("assignment1").components]
    ids = dict(components)["PositionalEncoding"]
    heavy = dict.fromkeys(ids, 100.0)  # as if its checks were most of the time: the cut falls among them
    near, far = split_at(components, heavy)
    assert set(near) & set(ids) and set(far) & set(ids)
    cost = dict(watching._cost)
    watching._cost.update(heavy)
    try:
        split = without_timings(as_json(watching.grade(assignment=watching.course.assignment("assignment1"),
                                                       submission=tree)))
    finally:
        watching._cost.clear()
        watching._cost.update(cost)
    one = without_timings(grade_json(tree, "assignment1", course=quick_course, cached=False))
    hung = [t["message"] for c in one["components"] for t in c["tests"] if t["status"] == "timeout"]
    assert len(hung) >= 2 and any("shortened" in m for m in hung), hung  # the case is not trivial
    assert split == one


def _edit(tree: Path, edits: dict[str, list[tuple[str, str]]]) -> None:
    for rel, pairs in edits.items():
        text = (tree / rel).read_text()
        for old, new in pairs:
            text = text.replace(old, new)
        (tree / rel).write_text(text)


@pytest.mark.xdist_group("watching")
def test_a_re_grade_that_keeps_the_unchanged_components_is_a_whole_grade(tmp_path, watching, quick_course):
    """`grade --watch` runs again only the components whose files changed (grader.grading.reuse), on two cores:
    after each edit the JSON is that of a grade that ran every check, failures, attribution, shrinking
    and restarts included, and the untouched components' checks were not run again."""
    tree = mutant(tmp_path, {})
    watching.grade(assignment=watching.course.assignment("assignment1"), submission=tree)
    crash = {"assignment1/positional_encoding.py": CRASHES["assignment1/positional_encoding.py"]}
    for edit in (patches(SPLIT_BUGS[0]), crash, {}):  # the last: a save that changes nothing
        _edit(tree, edit)
        before = watching.reused_checks
        report = without_timings(as_json(watching.grade(assignment=watching.course.assignment("assignment1"),
                                                        submission=tree)))
        assert report == without_timings(grade_json(tree, "assignment1", course=quick_course, cached=False)), edit
        checks = sum(t["status"] != "skipped" for c in report["components"] for t in c["tests"])
        assert 0 < watching.reused_checks - before < checks or not edit
    assert watching.reused_checks - before == checks  # nothing changed: nothing ran again
