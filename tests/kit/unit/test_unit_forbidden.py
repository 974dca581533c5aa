"""Forbidden-API judging (grader.judging.forbidden) in the grader's own process: the worker's record read as
untrusted data, and who pays for a finding, on staged trees made by hand."""

import shutil

from hypothesis import given
from hypothesis import strategies as st

from grader.findings import Seen
from grader.judging import forbidden, forbidden_scan
from tests.kit import strategies as s
from tests.kit.conftest import SOLUTIONS

A1 = s.COURSE.assignment("assignment1")
LAYER_NORM = s.component("LayerNorm")
APIS = set(LAYER_NORM.forbidden)
well_formed = st.tuples(st.sampled_from(sorted(APIS)), st.just("assignment1/layer_norm.py"), st.integers(1, 99),
                        st.sampled_from(["LayerNorm.forward", "helper"])).map(list)
junk = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=5),
                 st.tuples(st.just("torch.not_forbidden"), st.just("f.py"), st.just(1), st.just("x")).map(list),
                 st.tuples(st.sampled_from(sorted(APIS)), st.just("f.py"), st.just(True), st.just("x")).map(list),
                 st.tuples(st.sampled_from(sorted(APIS)), st.just("f.py"), st.just("1"), st.just("x")).map(list))


@s.KIT
@given(st.lists(st.tuples(st.booleans(), well_formed, junk), max_size=8), st.booleans())
def test_the_record_keeps_its_well_formed_entries_of_forbidden_apis_each_with_the_check_that_made_it(rows, known):
    record = [entry if good else bad for good, entry, bad in rows]
    checks = [f"check{i}" for i in range(len(record))] if known else []
    found = forbidden.executed(record, APIS, checks)
    kept = [(i, entry) for i, (good, entry, _) in enumerate(rows) if good]
    assert [(f.what, f.file, f.line, f.how) for f, _ in found] == [(e[0], e[1], e[2], "executed") for _, e in kept]
    assert [check for _, check in found] == [f"check{i}" if known else None for i, _ in kept]


@s.KIT
@given(junk)
def test_a_record_that_is_not_a_list_finds_nothing(record):
    assert forbidden.executed(record if not isinstance(record, list) else {"a": record}, APIS) == []


def staged(tmp_path, files: dict[str, str]):
    tree = tmp_path / "staged"
    shutil.copytree(SOLUTIONS / "assignment1", tree / "assignment1", ignore=shutil.ignore_patterns("__pycache__"))
    for rel, text in files.items():
        (tree / rel).write_text(text)
    return tree


def test_a_correct_tree_is_charged_nothing(tmp_path):
    assert forbidden.judge(A1, staged(tmp_path, {}), []) == {}


def test_a_forbidden_call_in_a_helper_file_is_charged_to_the_component_whose_file_imports_it(tmp_path):
    text = (SOLUTIONS / "assignment1" / "layer_norm.py").read_text()
    tree = staged(tmp_path, {
        "assignment1/helpers.py": "import torch.nn.functional as F\n\ndef norm(x, d):\n"
                                  "    return F.layer_norm(x, (d,))\n",
        "assignment1/layer_norm.py": "from assignment1 import helpers  # noqa\n" + text})
    verdict = forbidden.judge(A1, tree, [])
    assert set(verdict) == {"LayerNorm"}
    hits, _ = verdict["LayerNorm"]
    assert [h.what for h in hits] == ["torch.nn.functional.layer_norm"]


def test_a_forbidden_api_seen_running_is_charged_to_the_component_whose_check_ran_it(tmp_path):
    check = LAYER_NORM.checks[0].id
    entry = ["torch.nn.functional.layer_norm", "assignment1/__init__.py", 3, "helper"]
    verdict = forbidden.judge(A1, staged(tmp_path, {}), [(entry, check)])
    assert set(verdict) == {"LayerNorm"} and verdict["LayerNorm"][0][0].how == Seen.EXECUTED
    other = next(chk.id for c in A1.components if c.name != "LayerNorm" for chk in c.checks)
    assert forbidden.judge(A1, staged(tmp_path / "b", {}), [(entry, other)]) == {}


def honest_trees() -> dict[str, tuple[str, dict[str, list[tuple[str, str]]]]]:
    """Every correct variant the kit has, as (assignment, patches of solutions/): written differently,
    placed differently, accepted by the contract, data pipelines, PyTorch's own functions wrapped."""
    from tests.kit import mutants
    from tests.kit.sandbox import test_structure
    from tests.kit.sandbox.test_torch_backed import VARIANTS as TORCH_BACKED

    trees = {name: (next(iter(p)).partition("/")[0], p) for table in (mutants.VARIANTS, mutants.DEVICE_VARIANTS,
                                                                       mutants.DATA_PIPELINE_VARIANTS)
             for name, p in table.items()}
    # code relying on the contract's structure (tests/kit/sandbox/test_structure.py): the Annotated Transformer's
    # clones by `__import__('copy').deepcopy` among them
    structure = {name: ("assignment3", getattr(test_structure, name)) for name in (
        "LAYERS_BY_HAND", "INIT_BY_WALKING_MODULES", "READS_ATTRIBUTES_OF_ITS_PARTS", "CLONES_LAYERS")}
    return {**trees, **mutants.ACCEPTED_VARIANTS, **TORCH_BACKED, **structure}


def test_honest_code_is_never_flagged(tmp_path):
    """A flag holds a component's points for review (issue 51): no file of a correct variant, an
    independent implementation, the reference or the stubs carries one. A variant's files are read
    where it changes them (the others are the reference's)."""
    from tests.kit.conftest import ROOT, mutant
    from tests.kit.sandbox.test_similarity import independent

    apis = {api for a in s.COURSE.assignments.values() for c in a.components for api in c.forbidden}
    whole = {tree: sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.py"))
             for tree in (SOLUTIONS, ROOT / "assignments")}
    trees = [(tree, files) for tree, files in whole.items()]
    for name, (_, patches) in honest_trees().items():
        trees.append((mutant(tmp_path / name, patches), sorted(patches)))
    own = mutant(tmp_path / "independent", {})
    for file, text in independent().items():
        (own / "assignment1" / file).write_text(text)
    trees.append((own, [f"assignment1/{file}" for file in independent()]))
    flagged = {f"{tree.parent.name}/{rel}": [f.sighting() for f in flags] for tree, files in trees for rel in files
               if (flags := forbidden_scan.scan(tree, rel, apis)[1])}
    assert len(trees) > 15 and sum(len(files) for _, files in trees) > 50 and not flagged, flagged
    bad = mutant(tmp_path / "bad", {})  # and the scan does find one: the test can fail
    (bad / "assignment4" / "extra.py").write_text("import operator\nget = operator.attrgetter('a' + 'b')\n")
    assert [f.what for f in forbidden_scan.scan(bad, "assignment4/extra.py", apis)[1]] == ["operator.attrgetter"]
