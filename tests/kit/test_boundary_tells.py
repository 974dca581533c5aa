"""The trust boundary, tells: a composite cannot tell the reference's parts from its own by anything
it can read of them, and nothing in the instructor's grade is what a student's own run could have
recorded and answered from a table (issue 43, item 5)."""

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kit.conftest import ROOT, grade_json, mutant, run_grade, scores

PUBLIC = ROOT / "tests" / "grading" / "public" / "test_assignment1.py"


class _Item:
    def __init__(self, name: str, path: Path, obj):
        self.name, self.path, self.obj = name, path, obj


class _Submission:  # what the plugin reads and writes of the submission at collection
    below: dict = {}
    fresh_seed = None
    order: list = []

    def __init__(self, reference):
        self.reference = reference


def _draws(reference, quick: bool = False) -> list[int]:
    """What a public property (by its place and name: LayerNorm's) draws when the grading plugin has
    collected it for a grade with `reference` (the instructor's) or without (the student's); `quick`:
    as an attribution run collects it (grader.judging.attribution), among no other check."""
    from grader import load_course
    from grader.suite.plugin import GradingPlugin

    seen: list[int] = []

    @settings(derandomize=True, max_examples=8, database=None)  # as the grading profile draws
    @given(st.integers(-10**9, 10**9))
    def test_layer_norm_rows_are_normalised(n):
        seen.append(n)

    checks = {"layer_norm_rows_are_normalised": ()}
    if not quick:  # the first run holds the other checks too
        checks |= {"layer_norm_matches_torch": (), "feed_forward_matches_torch": ()}
    plugin = GradingPlugin(load_course(ROOT / "course.toml"), _Submission(reference), checks,
                           quick=frozenset(checks) if quick else frozenset())
    items = [_Item("test_layer_norm_rows_are_normalised", PUBLIC, test_layer_norm_rows_are_normalised)]
    plugin.pytest_collection_modifyitems(None, None, items)
    assert items
    items[0].obj()
    return seen


def test_the_instructors_grade_draws_the_public_properties_afresh_and_always_the_same():
    """The student's run draws a public property's inputs from the digest of its source (derandomized):
    the instructor's grade drew the same, and a lookup table of them scored 5.83/10 against 1.67. Now
    the instructor's grade draws them from course.toml's hidden_seed (not shipped), the same every
    grade and in every run of it, an attribution run's included; the student's run draws as before."""
    student, again = _draws(None), _draws(None)
    instructor, rerun = _draws(ROOT / "solutions"), _draws(ROOT / "solutions", quick=True)
    assert student == again and instructor == rerun  # derandomized: reproducible either way
    assert set(instructor[1:]).isdisjoint(student[1:]), (student, instructor)  # (the first: the simplest)


def test_the_instructors_draws_are_the_same_in_another_process():
    """The seed is a function of the course alone: a grading split across processes
    (grader.grading.split) or graded again elsewhere draws the same inputs."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from tests.kit.test_boundary_tells import _draws; "
            "from pathlib import Path; print(json.dumps(_draws(Path(sys.argv[1]) / 'solutions')))")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == _draws(ROOT / "solutions")


# --- a lookup table of the student's own draws -------------------------------------------------

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


def _answers(table: dict) -> str:
    return (f"        table = {table!r}\n"
            "        if x.device.type == 'cpu' and _key(x, self) in table:\n"
            "            return torch.tensor(table[_key(x, self)], dtype=x.dtype).reshape(x.shape)\n"
            "        return torch.zeros_like(x)\n")


def _layer_norm(tmp_path: Path, body: str) -> Path:
    return mutant(tmp_path, {"assignment1/layer_norm.py": [KEY, (LN_BODY, body)]})


def _students_run(tree: Path, course: Path, out: Path) -> dict:
    """`grade assignment1` on `tree` as the student runs it (public tier, no reference, no hidden seed)."""
    proc = run_grade("assignment1", "--submission", str(tree), "--course", str(course), "--json", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(out.read_text())


def _students_course(tmp_path: Path) -> Path:
    """The course as `grade release` writes it for students, keeping all that a check prints."""
    from grader import load_course
    from grader.authoring.release import _public_tier, course_text

    course = load_course(ROOT / "course.toml")
    out = tmp_path / "student"
    for rel, src in _public_tier(course).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out / rel)
    text = re.sub(r"^output_kb = \d+", "output_kb = 4096", course_text(course), flags=re.M)
    (out / "course.toml").write_text(text)
    return out / "course.toml"


def test_a_lookup_table_of_the_students_draws_scores_what_it_computes_in_the_instructors_grade(tmp_path):
    """A LayerNorm that answers from a table of every input the student's own run gave it (recorded by
    a correct LayerNorm printing them), else zeros. In the student's run it scored 8.89 against zeros'
    2.22. In the instructor's grade every check that draws its inputs (a Hypothesis property) gives
    what it gives zeros, and the same when graded again. The checks on one fixed input
    (layer_norm_default_eps_is_the_contracts) still pay the table: see security.md's open list."""
    course = _students_course(tmp_path)
    recorded = _students_run(_layer_norm(tmp_path / "recorder", RECORDS), course, tmp_path / "recorder.json")
    table: dict = {}
    for comp in recorded["components"]:
        for check in comp["tests"]:
            for line in check.get("output", "").splitlines():
                if line.startswith("KIT43 "):
                    key, value = ast.literal_eval(line.removeprefix("KIT43 "))
                    table[key] = value
    assert len(table) > 20, len(table)
    lookup, zeros = _layer_norm(tmp_path / "lookup", _answers(table)), _layer_norm(tmp_path / "zeros", _answers({}))
    at_home = {name: scores(_students_run(tree, course, tmp_path / f"{name}.json"))["LayerNorm"]
               for name, tree in (("lookup", lookup), ("zeros", zeros))}
    assert at_home["lookup"] > at_home["zeros"] + 2, at_home  # the table pays in the student's own run
    graded = grade_json(lookup, "assignment1", cached=False)
    again = grade_json(lookup, "assignment1", cached=False)
    outcomes = [{t["id"]: (t["status"], t.get("message")) for c in r["components"] for t in c["tests"]}
                for r in (graded, again, grade_json(zeros, "assignment1"))]
    differ = {i: (outcomes[0][i], outcomes[1].get(i)) for i in outcomes[0] if outcomes[0][i] != outcomes[1].get(i)}
    assert scores(graded) == scores(again) and not differ, differ  # the same grade, graded again
    drawn = [i for i in outcomes[0] if f"test_{i}" in _drawing("assignment1")]
    assert len(drawn) >= 5, drawn
    assert {i: outcomes[0][i][0] for i in drawn} == {i: outcomes[2][i][0] for i in drawn}, at_home


def _drawing(assignment: str) -> set[str]:
    """The checks of `assignment` that draw their inputs (Hypothesis properties), read from the suites'
    source: imported here, before a grading loads its profile, their settings would keep this process's"""
    found = set()
    for tier in ("public", "hidden"):
        tree = ast.parse((ROOT / "tests" / "grading" / tier / f"test_{assignment}.py").read_text())
        found |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
                  and any("given" in ast.unparse(d) for d in node.decorator_list)}
    return found


def _tree(module) -> dict:
    """Every tell a composite could read of its parts, all the way down: per submodule, its names
    (dir, vars, hasattr of the kit's own names), its class's MRO names and its repr."""
    kit = ("_kit_link", "_kit_build", "_kit_path", "StandIn")
    return {name: (sorted(dir(m)), sorted(vars(m)), [c.__name__ for c in type(m).__mro__], repr(m),
                   [n for n in kit if hasattr(m, n)], type(m).__module__, type(m).__qualname__)
            for name, m in module.named_modules()}


def test_a_composites_parts_look_the_same_all_the_way_down(tmp_path):
    """In the worker, as the instructor's grade runs EncoderLayer: once on its own parts (dressed), once
    with the reference's ResidualConnection swapped in (an attribution run). Every submodule, the
    LayerNorm inside the residual connection included, shows the same names, MRO, repr and kit names
    (on main the reference's inner LayerNorm had `_kit_link` and StandIn in its MRO, the submission's
    none: a composite read that and had its failures excused, 6 against 2)."""
    from grader import load_course
    from grader.sandbox.child import standins
    from grader.sandbox.child.fixtures import SUBMISSION
    from grader.sandbox.child.tree import import_tree, resolve
    from grader.sandbox.child.worker import Worker
    from grader.suite.parts import ReferenceParts
    from grader.suite.plugin import GradingPlugin
    from tests.kit.conftest import mutant

    course = load_course(ROOT / "course.toml")
    own = GradingPlugin(course, _Submission(ROOT / "solutions"), {}).own_parts["EncoderLayer"]
    rc = next(p for p in own if p.endswith(":ResidualConnection"))
    assert any(p.endswith(":LayerNorm") for p in own), own  # a part of a part is dressed too
    import_tree(mutant(tmp_path, {}), SUBMISSION)
    parts = ReferenceParts(None)
    worker = Worker()
    worker.link = standins.Link(parts.answer, known=worker.known)
    layer = "assignment3.encoder:EncoderLayer"
    for part in [*own, layer]:  # imported first, as the grader's import requests do
        resolve(SUBMISSION, part)
    seen = []
    for swapped in ([], [rc]):
        parts.allow(ROOT / "solutions" if swapped else None, set(swapped))
        worker.op_swap({"parts": swapped, "own": [p for p in own if p not in swapped],
                        "classes": {p: parts.describe_class(p) for p in swapped}})
        seen.append(_tree(resolve(SUBMISSION, layer)(16, 2, 32, 0.0)))
        worker.op_reset({})
    mine, theirs = seen
    assert mine.keys() == theirs.keys()
    differ = {k: [i for i in range(len(mine[k])) if mine[k][i] != theirs[k][i]] for k in mine}
    assert not any(differ.values()), {k: (mine[k][v[0]], theirs[k][v[0]]) for k, v in differ.items() if v}


def test_a_stand_in_has_no_plain_attribute_the_submissions_part_lacks(tmp_path):
    """The submission's TokenEmbedding keeps its scale as `dim`, the reference's as `d_model`: the
    reference's stand-in used to carry both, so `hasattr(self.token, "d_model")` told them apart.
    Both kinds now show the submission's names only, through dir, vars and hasattr."""
    import importlib

    from grader.sandbox.child import standins
    from grader.sandbox.child.tree import import_tree
    from grader.suite.parts import ReferenceParts
    from tests.kit.conftest import mutant

    tree = mutant(tmp_path, {"assignment1/embedding.py": [
        ("        self.d_model = d_model\n", "        self.dim = d_model\n"),
        ("math.sqrt(self.d_model)  # (B, T, d_model)", "math.sqrt(self.dim)  # (B, T, d_model)")]})
    import_tree(tree, "_h43_student")
    mine = importlib.import_module("_h43_student.assignment1.embedding").TokenEmbedding
    part = "assignment1.embedding:TokenEmbedding"
    parts = ReferenceParts(None)
    parts.allow(ROOT / "solutions", {part})
    link = standins.Link(parts.answer, known=lambda part: None)
    theirs = link.stand_in(part, parts.describe_class(part), mine)(7, 4, 0)
    own = link.wrap(mine)(7, 4, 0)
    assert not hasattr(theirs, "d_model") and theirs.dim == own.dim == 4
    assert sorted(dir(theirs)) == sorted(dir(own)) and sorted(vars(theirs)) == sorted(vars(own))


def test_a_part_nested_in_a_swapped_part_shows_the_submissions_attribute_names(tmp_path):
    """An attribution run of Encoder swaps in the reference's EncoderLayer; the MultiHeadAttention inside
    it (`self.layers[0].self_attn`) is the reference's. The submission's MultiHeadAttention keeps its
    head size as `head_dim`, the reference's as `d_k`: the nested stand-in showed `d_k` through dir and
    vars, the submission's own `head_dim`. Both now show the submission's names, all the way down."""
    from grader import load_course
    from grader.sandbox.child.fixtures import SUBMISSION
    from grader.sandbox.child.tree import import_tree
    from grader.suite.plugin import GradingPlugin

    tree = mutant(tmp_path, {})
    mha = tree / "assignment2" / "multi_head_attention.py"
    mha.write_text(mha.read_text().replace("self.d_k", "self.head_dim"))
    own = GradingPlugin(load_course(ROOT / "course.toml"), _Submission(ROOT / "solutions"), {}).own_parts["Encoder"]
    layer = next(p for p in own if p.endswith(":EncoderLayer"))
    try:
        _forget(SUBMISSION)  # a tree imported by an earlier test under the worker's package name
        import_tree(tree, SUBMISSION)
        mine, theirs = _encoder_seen_twice(own, layer)
    finally:
        _forget(SUBMISSION)
    assert mine.keys() == theirs.keys() and "head_dim" in mine["layers.0.self_attn"][1]
    differ = {k: [i for i in range(len(mine[k])) if mine[k][i] != theirs[k][i]] for k in mine}
    assert not any(differ.values()), {k: (mine[k][v[0]], theirs[k][v[0]]) for k, v in differ.items() if v}


def _forget(package: str) -> None:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def _encoder_seen_twice(own: tuple, layer: str) -> tuple[dict, dict]:
    """Encoder's tree of tells, built on its own parts and with the reference's `layer` swapped in."""
    from grader.sandbox.child import standins
    from grader.sandbox.child.fixtures import SUBMISSION
    from grader.sandbox.child.tree import resolve
    from grader.sandbox.child.worker import Worker
    from grader.suite.parts import ReferenceParts

    parts = ReferenceParts(None)
    worker = Worker()
    worker.link = standins.Link(parts.answer, known=worker.known)
    encoder = "assignment3.encoder:Encoder"
    for part in [*own, encoder]:
        resolve(SUBMISSION, part)
    seen = []
    for swapped in ([], [layer]):
        parts.allow(ROOT / "solutions" if swapped else None, set(swapped))
        worker.op_swap({"parts": swapped, "own": [p for p in own if p not in swapped],
                        "classes": {p: parts.describe_class(p) for p in swapped}})
        seen.append(_tree(resolve(SUBMISSION, encoder)(2, 16, 2, 32, 0.0)))
        worker.op_reset({})
    return seen[0], seen[1]
