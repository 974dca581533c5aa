"""Forbidden APIs across the whole submission (issue 43, item 4), graded: a helper in the assignment
package's `__init__.py` is the submission's code too, charged to the component that runs it; the recorder
patched through sys.modules and the API taken as `vars(F)["layer_norm"]` cost LayerNorm its points, and
are flagged. Since issue 51 an operator that ran is recorded as the forbidden API it does, however the
code named it.

Each of item 4's attacks was seen to get full marks, nothing flagged, before grader.judging.forbidden read
every staged file (the judge-only cases: tests/kit/unit/test_forbidden_reach.py).
"""

import pytest

from grader.batch import summary
from grader.report_json import graded
from tests.kit.conftest import full_marks, grade_json, mutant, scores
from tests.kit.reach_trees import ATT, COURSE, IN_INIT, INIT1, LN, LN_BODY, TAMPERED, _helper_in, _line


@pytest.mark.parametrize("attack", ["init_helper", "recorder_patched"])
def test_graded_layer_norm_from_another_file_or_a_patched_recorder_is_zeroed(tmp_path, attack):
    tree = _helper_in(tmp_path, *IN_INIT) if attack == "init_helper" else mutant(tmp_path, TAMPERED)
    report = grade_json(tree, "assignment1")
    got, full = scores(report), full_marks(report)
    assert got["LayerNorm"] == 0, got
    assert {n: s for n, s in got.items() if n != "LayerNorm" and s != full[n]} == {}
    layer_norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
    assert "torch.nn.functional.layer_norm" in {f["what"] for f in layer_norm["forbidden"]}
    if attack == "init_helper":  # run: charged to the check that ran it, though made in __init__.py
        assert {f["where"].partition(":")[0] for f in layer_norm["forbidden"] if f["how"] == "executed"} == {INIT1}
    else:
        assert {"sys.modules", "vars()"} <= {f["what"] for f in layer_norm["flagged"]}
        rows = summary.summarise(COURSE.assignment("assignment1"),
                                 [("mallory", graded({**report, "batch": {"status": "graded"}}))])
        assert {(r["student"], r["component"], r["what"]) for r in rows["flagged"]} >= {
            ("mallory", "LayerNorm", "sys.modules"), ("mallory", "LayerNorm", "vars()")}


ATTRGETTER = {LN: [(
    LN_BODY,
    "        import operator\n\n"
    "        kernel = operator.attrgetter('ops.aten.' + 'native_layer_norm')(torch)\n"
    "        return kernel(x, [x.size(-1)], self.gamma, self.beta, self.eps)[0]\n")]}


def test_a_kernel_reached_through_attrgetter_is_recorded_as_the_api_and_flagged(tmp_path):
    """Issue 51: the operator that ran is recorded as the forbidden API it does (aten::native_layer_norm is
    torch.nn.functional.layer_norm's kernel), however the code named it: LayerNorm scores 0 by that, not only
    by a hold, and its reach by a computed name is flagged too; nothing else loses a point."""
    tree = mutant(tmp_path, ATTRGETTER)
    report = grade_json(tree, "assignment1")
    got, full = scores(report), full_marks(report)
    layer_norm = next(c for c in report["components"] if c["name"] == "LayerNorm")
    assert got["LayerNorm"] == 0, layer_norm
    kernel = _line(tree, LN, "return kernel(")
    assert {"what": "torch.nn.functional.layer_norm", "where": f"{LN}:{kernel}", "how": "executed"} in \
        layer_norm["forbidden"], layer_norm["forbidden"]
    assert ("operator.attrgetter", f"{LN}:{_line(tree, LN, 'attrgetter')}") in {
        (f["what"], f["where"]) for f in layer_norm["flagged"]}
    assert {n: s for n, s in got.items() if n != "LayerNorm" and s != full[n]} == {}


def test_attention_by_the_sdpa_operator_written_plainly_is_zeroed(tmp_path):
    """torch.ops.aten.scaled_dot_product_attention (flagged, and 12/12, before issue 51): recorded as
    torch.nn.functional.scaled_dot_product_attention, so the attention scores 0; MultiHeadAttention, which
    runs it, keeps its points (the hit is the attention's, where it is made)."""
    tree = mutant(tmp_path, {ATT: [("    return weights @ v, weights",
                                    "    torch.ops.aten.scaled_dot_product_attention(q, k, v)\n"
                                    "    return weights @ v, weights")]})
    report = grade_json(tree, "assignment2")
    got, full = scores(report), full_marks(report)
    attention = next(c for c in report["components"] if c["name"] == "scaled_dot_product_attention")
    assert got["scaled_dot_product_attention"] == 0, attention
    assert {(f["what"], f["how"]) for f in attention["forbidden"]} >= {
        ("torch.nn.functional.scaled_dot_product_attention", "executed")}, attention["forbidden"]
    assert {n: s for n, s in got.items() if n != "scaled_dot_product_attention" and s != full[n]} == {}
