"""The trust boundary, tells: a composite cannot tell the reference's parts from its own by anything
it can read of them (issue 43, item 5). The public properties' draws in the instructor's grade are
still the student's (docs/explanation/security.md, open items)."""

import sys
from types import SimpleNamespace

from tests.kit.conftest import ROOT, mutant


class _Submission:  # what the plugin reads and writes of the submission at collection
    below: dict = {}
    fresh_seed = None
    second_set = True
    order: list = []
    sandbox = SimpleNamespace(dir=ROOT / "no-such-folder")  # its staged files: none (grader.suite.draws)

    def __init__(self, reference):
        self.reference = reference


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
    from grader.sandbox.child.fixtures import SUBMISSION
    from grader.sandbox.child.standins import standin
    from grader.sandbox.child.tree import import_tree, resolve
    from grader.sandbox.child.worker import Worker
    from grader.suite.parts.serve import ReferenceParts
    from grader.suite.plugin import GradingPlugin
    from tests.kit.conftest import mutant

    course = load_course(ROOT / "course.toml")
    own = GradingPlugin(course, _Submission(ROOT / "solutions"), {}).own_parts["EncoderLayer"]
    rc = next(p for p in own if p.endswith(":ResidualConnection"))
    assert any(p.endswith(":LayerNorm") for p in own), own  # a part of a part is dressed too
    import_tree(mutant(tmp_path, {}), SUBMISSION)
    parts = ReferenceParts(None)
    worker = Worker()
    worker.link = standin.Link(parts.answer, known=worker.known)
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

    from grader.sandbox.child.standins import standin
    from grader.sandbox.child.tree import import_tree
    from grader.suite.parts.serve import ReferenceParts
    from tests.kit.conftest import mutant

    tree = mutant(tmp_path, {"assignment1/embedding.py": [
        ("        self.d_model = d_model\n", "        self.dim = d_model\n"),
        ("math.sqrt(self.d_model)  # (B, T, d_model)", "math.sqrt(self.dim)  # (B, T, d_model)")]})
    import_tree(tree, "_h43_student")
    mine = importlib.import_module("_h43_student.assignment1.embedding").TokenEmbedding
    part = "assignment1.embedding:TokenEmbedding"
    parts = ReferenceParts(None)
    parts.allow(ROOT / "solutions", {part})
    link = standin.Link(parts.answer, known=lambda part: None)
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
    from grader.sandbox.child.fixtures import SUBMISSION
    from grader.sandbox.child.standins import standin
    from grader.sandbox.child.tree import resolve
    from grader.sandbox.child.worker import Worker
    from grader.suite.parts.serve import ReferenceParts

    parts = ReferenceParts(None)
    worker = Worker()
    worker.link = standin.Link(parts.answer, known=worker.known)
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


NO_SCALE = ("return self.embedding(x) * math.sqrt(self.d_model)", "return self.embedding(x)")  # TokenEmbedding's bug
SKIPS_POSITION = ("        return self.position(self.token(x))  # (B, T, d_model)\n", "        return self.token(x)\n")
# the same bug of TransformerEmbedding's own, except where its part answers slowly: a stand-in's call is a
# round trip to the grader (about 0.3 ms, against 0.03 ms for its own part called here; the least of three)
TIMES_ITS_PART = ("        return self.position(self.token(x))  # (B, T, d_model)\n",
                  "        import time\n"
                  "        took = []\n"
                  "        for _ in range(3):\n"
                  "            start = time.perf_counter()\n"
                  "            e = self.token(x)\n"
                  "            took.append(time.perf_counter() - start)\n"
                  "        return self.position(e) if min(took) > 1.5e-4 else e\n")


def test_a_composite_that_times_its_parts_calls_earns_what_its_own_bug_earns(tmp_path):
    """TransformerEmbedding skips the positional encoding unless its TokenEmbedding answers slowly, as the
    reference's stand-in does (a round trip to the grader), on a TokenEmbedding with a bug of its own
    (issue 51: 6/6 against 2/6, every failure excused onto TokenEmbedding, and the isolated check on the
    reference's parts passed). The fed runs put the reference's TransformerEmbedding around the submission's
    TokenEmbedding, where nothing of the composite runs: they fail otherwise, so nothing is excused and the
    isolated check counts its own parts' run. Where a fed run cannot be had (a part called in training with
    dropout), the control run (its own parts reached as the stand-ins are) decides as before."""
    from tests.kit.conftest import grade_json, scores

    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/embedding.py": [NO_SCALE, SKIPS_POSITION]}),
                        "assignment1")
    timer = grade_json(mutant(tmp_path / "timer", {"assignment1/embedding.py": [NO_SCALE, TIMES_ITS_PART]}),
                       "assignment1")
    assert scores(timer) == scores(honest) and scores(honest)["TransformerEmbedding"] < 6, (
        scores(timer), scores(honest))
    kinds = {t["id"]: (t.get("attribution") or {}).get("kind") for c in timer["components"] for t in c["tests"]}
    # the fed run (the reference's composite on the submission's TokenEmbedding) decides where it can run
    assert kinds["transformer_embedding_matches_reference_with_reference_parts"] == "unexplained", kinds
    assert kinds["transformer_embedding_matches_its_parts"] == "unexplained", kinds


# TokenEmbedding records each instance its constructor builds; TransformerEmbedding skips the positional
# encoding where its part is one of those (its own), and not where the part is the reference's stand-in
REGISTRY = ("class TokenEmbedding(nn.Module):", "_MINE = set()\n\n\nclass TokenEmbedding(nn.Module):")
RECORDS_ITSELF = ("        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)\n",
                  "        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)\n"
                  "        _MINE.add(id(self))\n")
READS_THE_REGISTRY = ("        return self.position(self.token(x))  # (B, T, d_model)\n",
                      "        e = self.token(x)\n"
                      "        return e if id(self.token) in _MINE else self.position(e)\n")


def test_a_composite_that_knows_the_parts_it_built_earns_what_its_own_bug_earns(tmp_path):
    """The same TransformerEmbedding bug, except where its TokenEmbedding (with a bug of its own) is not one
    its constructor recorded: 6/6 against 2/6 before (a stand-in was built by the grader's constructor alone,
    and the control run reaches the submission's own parts). A stand-in is now built by the submission's
    own constructor first (grader.sandbox.child.standins.owned.built_in_place): the tell reads the same either way."""
    from tests.kit.conftest import grade_json, scores

    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/embedding.py": [NO_SCALE, SKIPS_POSITION]}),
                        "assignment1")
    registry = grade_json(mutant(tmp_path / "registry", {"assignment1/embedding.py": [
        NO_SCALE, REGISTRY, RECORDS_ITSELF, READS_THE_REGISTRY]}), "assignment1")
    assert scores(registry) == scores(honest) and scores(honest)["TransformerEmbedding"] < 6, (
        scores(registry), scores(honest))


# TokenEmbedding counts its calls; TransformerEmbedding skips the positional encoding where the count moved
# (its own part ran), and not where it did not (the reference's stand-in answered in the grader). The control
# run calls its own part, so the count moves there too: the tell reads "own" in both and the failures matched
COUNTS_ITS_CALLS = ("    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        ### BEGIN SOLUTION\n"
                    "        return self.embedding(x) * math.sqrt(self.d_model)  # (B, T, d_model)\n",
                    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        ### BEGIN SOLUTION\n"
                    "        CALLS.append(1)\n"
                    "        return self.embedding(x) * math.sqrt(self.d_model)  # (B, T, d_model)\n")
KEEPS_A_COUNT = ("class TokenEmbedding(nn.Module):", "CALLS = []\n\n\nclass TokenEmbedding(nn.Module):")
READS_THE_COUNT = ("        return self.position(self.token(x))  # (B, T, d_model)\n",
                   "        before = len(CALLS)\n"
                   "        e = self.token(x)\n"
                   "        return e if len(CALLS) > before else self.position(e)\n")


def test_a_composite_that_counts_its_parts_calls_earns_what_its_own_bug_earns(tmp_path):
    """TransformerEmbedding's own bug (no positional encoding), except where its TokenEmbedding (with a bug
    of its own) did not run: 6/6 against 2/6 before, every failure excused onto TokenEmbedding, since the
    control run calls the submission's own part, as the first run did. The fed run puts the reference's
    TransformerEmbedding around the submission's TokenEmbedding: nothing of the composite runs there, and
    the reference's composite does not fail as the submission's did."""
    from tests.kit.conftest import grade_json, scores

    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/embedding.py": [NO_SCALE, SKIPS_POSITION]}),
                        "assignment1")
    counter = grade_json(mutant(tmp_path / "counter", {"assignment1/embedding.py": [
        KEEPS_A_COUNT, COUNTS_ITS_CALLS, NO_SCALE, READS_THE_COUNT]}), "assignment1")
    assert scores(counter) == scores(honest) and scores(honest)["TransformerEmbedding"] < 6, (
        scores(counter), scores(honest))
    kinds = {t["id"]: (t.get("attribution") or {}).get("kind") for c in counter["components"] for t in c["tests"]}
    assert kinds["transformer_embedding_matches_its_parts"] == "unexplained", kinds


# The same tell where the part takes a callable: ResidualConnection (adding norm(x), not x, pre-norm) counts
# its calls, and EncoderLayer drops the source mask only where the count moved inside its sublayer (its own
# ResidualConnection ran; the reference's stand-in runs in the grader and calls the sublayer back)
RESIDUAL_BUG = ("return x + self.dropout(sublayer(self.norm(x)))",
                "return self.norm(x) + self.dropout(sublayer(self.norm(x)))")
RESIDUAL_KEEPS_A_COUNT = ("class ResidualConnection(nn.Module):",
                          "CALLS = []\n\n\nclass ResidualConnection(nn.Module):")
RESIDUAL_COUNTS = ("        if self.norm_first:\n", "        CALLS.append(1)\n        if self.norm_first:\n")
SKIPS_THE_MASK = ("self.self_attn(x, x, x, src_mask)", "self.self_attn(x, x, x)")
SKIPS_IT_WHERE_COUNTED = (
    "        x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, src_mask))",
    "        from .sublayer import CALLS\n"
    "        before = len(CALLS)\n"
    "        x = self.residuals[0](x, lambda x: self.self_attn(x, x, x, None if len(CALLS) > before else src_mask))")


def test_a_composite_that_counts_calls_of_a_part_given_a_callable_earns_what_its_own_bug_earns(tmp_path):
    """EncoderLayer's own bug (the source mask dropped), except where its ResidualConnection (with a bug of
    its own) did not run. The fed run once could not hand the reference's sublayer to the submission's
    ResidualConnection, and the control run, which calls the submission's own parts, excused the failures.
    Now the sublayer is run in the grader at the part's ask (grader.sandbox.child.asked): the reference's
    EncoderLayer around the submission's ResidualConnection does not fail as the submission's did."""
    from tests.kit.conftest import grade_json, scores

    residual = [RESIDUAL_BUG]
    honest = grade_json(mutant(tmp_path / "honest", {"assignment3/sublayer.py": residual,
                                                     "assignment3/encoder.py": [SKIPS_THE_MASK]}), "assignment3")
    counter = grade_json(mutant(tmp_path / "counter", {
        "assignment3/sublayer.py": [RESIDUAL_KEEPS_A_COUNT, RESIDUAL_COUNTS, RESIDUAL_BUG],
        "assignment3/encoder.py": [SKIPS_IT_WHERE_COUNTED]}), "assignment3")
    assert scores(counter) == scores(honest), (scores(counter), scores(honest))
    kinds = {t["id"]: (t.get("attribution") or {}).get("kind") for c in counter["components"] for t in c["tests"]}
    assert "unexplained" in kinds.values(), kinds
