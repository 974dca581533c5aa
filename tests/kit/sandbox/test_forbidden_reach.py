"""Forbidden APIs across the whole submission (issue 43, item 4), graded: a helper in the assignment
package's `__init__.py` is the submission's code too, charged to the component that runs it; the recorder
patched through sys.modules and the API taken as `vars(F)["layer_norm"]` cost LayerNorm its points, and
are flagged. Since issue 51 an operator that ran is recorded as the forbidden API it does, however the
code named it.

Each of item 4's attacks was seen to get full marks, nothing flagged, before grader.judging.forbidden read
every staged file (the judge-only cases: tests/kit/unit/test_forbidden_reach.py).
"""

import re

import pytest

from grader.batch import summary
from grader.report_json import graded
from tests.kit.conftest import ROOT, earned, full_marks, grade_json, held, mutant, scores
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


# LayerNorm's forward by F.layer_norm (a computed name: no forbidden name in the source) run in a forked
# child, its output piped back: the recorder in the worker never sees the call (issue 51: 9.17/10 then)
IN_A_FORK = ("        import os, pickle\n"
             "        r, w = os.pipe()\n"
             "        if os.fork() == 0:\n"
             "            norm = torch.nn.functional.__dict__['layer' + '_norm']\n"
             "            norm = norm(x, (x.size(-1),), self.gamma, self.beta, self.eps)\n"
             "            os.write(w, pickle.dumps(norm.detach()))\n"
             "            os._exit(0)\n"
             "        os.close(w)\n"
             "        with os.fdopen(r, 'rb') as f:\n"
             "            return pickle.loads(f.read())\n")


def test_a_forbidden_api_run_in_a_fork_earns_nothing_even_where_flags_count(tmp_path):
    """The fork is flagged, which holds LayerNorm's points under the default policy; under `[policy]
    flagged = "count"` they counted, all of them. The worker now starts no process for the submission
    (grader.sandbox.child.processes): the attack's checks earn what the same forward earns when it raises
    the refusal itself, and the flag still names the line."""
    text = (ROOT / "course.toml").read_text().replace('flagged = "hold"', 'flagged = "count"')
    for key in ("reference", "assignments", "suites"):
        text = re.sub(rf'^{key} = "([^"]+)"', lambda m, key=key: f'{key} = "{ROOT / m.group(1)}"', text, flags=re.M)
    course = tmp_path / "course.toml"
    course.write_text(text)
    forked = grade_json(mutant(tmp_path / "forked", {LN: [(LN_BODY, IN_A_FORK)]}), "assignment1", course=course)
    refused = grade_json(mutant(tmp_path / "refused", {LN: [(LN_BODY, "        raise PermissionError(1, 'no')\n")]}),
                         "assignment1", course=course)
    assert not held(forked) and earned(forked) == earned(refused), (earned(forked), earned(refused))
    assert earned(forked)["LayerNorm"] < full_marks(forked)["LayerNorm"], earned(forked)
    [layer_norm] = [c for c in forked["components"] if c["name"] == "LayerNorm"]
    assert "os.fork" in {f["what"] for f in layer_norm["flagged"]} and not layer_norm["forbidden"], layer_norm
