"""Forbidden APIs across the whole submission (issue 43, item 4), judged from the source: a helper in the
assignment package's `__init__.py` or in a sibling component's file is the submission's code too,
charged to the component that imports it; the recorder patched through sys.modules and the API taken as
`vars(F)["layer_norm"]` are found in the source, and the introspection is flagged with its line. Each
tool of dynamic reach gains nothing under the default hold (issue 51), and the attacks tests/kit/attacks.py
says are flagged are those the scan flags.

Each attack was seen to get full marks, nothing flagged, before grader.judging.forbidden read every staged
file; these judge-only cases need no grading run (the gradings: tests/kit/sandbox/test_forbidden_reach.py).
"""

from dataclasses import replace
from pathlib import Path

import pytest

from grader.findings import Seen, Sighting
from grader.judging import forbidden
from tests.kit.conftest import mutant
from tests.kit.reach_trees import (
    ATT,
    COURSE,
    FF,
    IN_INIT,
    INIT1,
    INIT2,
    LN,
    LN_BODY,
    TAMPERED,
    _helper_in,
    _line,
)

IN_SIBLING = (FF, "from .feed_forward import _norm")


def _judge(tree: Path, assignment: str) -> dict:
    return forbidden.judge(COURSE.assignment(assignment), tree, [])


@pytest.mark.parametrize("file, importing", [IN_INIT, IN_SIBLING], ids=["init", "sibling"])
def test_a_helper_in_another_file_is_charged_to_the_component_importing_it(tmp_path, file, importing):
    tree = _helper_in(tmp_path, file, importing)
    verdict = _judge(tree, "assignment1")
    where = f"{file}:{_line(tree, file, '_F.layer_norm(')}"
    assert verdict == {"LayerNorm": ([Sighting("torch.nn.functional.layer_norm", where, Seen.SOURCE)], [])}


def test_a_helper_in_the_package_init_for_attention_is_charged_to_attention(tmp_path):
    tree = mutant(tmp_path, {
        ATT: [("    return weights @ v, weights",
               "    from . import _sdpa\n    _sdpa(q, k, v)\n    return weights @ v, weights")]})
    (tree / INIT2).write_text((tree / INIT2).read_text() + "\n\ndef _sdpa(q, k, v):\n    import torch\n"
                              "    return torch.nn.functional.scaled_dot_product_attention(q, k, v)\n")
    verdict = _judge(tree, "assignment2")
    # multi-head attention imports the attention's file, whose component takes nothing from __init__:
    # both reach it, both forbid it
    assert set(verdict) == {"scaled_dot_product_attention", "MultiHeadAttention"}
    assert {h.where for h in verdict["scaled_dot_product_attention"][0]} == {
        f"{INIT2}:{_line(tree, INIT2, 'scaled_dot_product_attention(q')}"}


def test_the_recorder_patched_and_vars_F_are_found_and_flagged_by_line(tmp_path):
    tree = mutant(tmp_path, TAMPERED)
    hits, flags = _judge(tree, "assignment1")["LayerNorm"]
    assert hits == [Sighting("torch.nn.functional.layer_norm", f"{LN}:{_line(tree, LN, 'vars(F)')}", Seen.SOURCE)]
    assert {(f.what, f.where) for f in flags} >= {
        ("sys.modules", f"{LN}:{_line(tree, LN, 'sys.modules')}"), ("vars()", f"{LN}:{_line(tree, LN, 'vars(F)')}")}


@pytest.mark.parametrize("source, flag", [
    ("import gc\n", "gc"), ("import ctypes\n", "ctypes"), ("import inspect\n", "inspect"),
    ("import sys\nf = sys._getframe(1).f_back\n", "sys._getframe"), ("g = globals()\n", "globals()"),
    ("class LayerNorm:\n    def f(self, m):\n        return m.__dict__\n", "__dict__"),
    ("def f(e):\n    return e.__traceback__.tb_frame.f_globals\n", "frame inspection"),
    ("import importlib\nm = importlib.import_module('torch')\n", "importlib"),
])
def test_introspection_is_flagged_wherever_it_is(tmp_path, source, flag):
    tree = mutant(tmp_path, {})
    (tree / INIT1).write_text((tree / INIT1).read_text() + "\n" + source)
    hits, flags = _judge(tree, "assignment1").get("LayerNorm", ([], []))
    assert not hits and flag in {f.what for f in flags}, flags
    assert all(f.where.startswith(f"{INIT1}:") for f in flags)


def test_a_course_that_forbids_no_api_still_flags_the_tools_of_evasion(tmp_path):
    # the flags guard the placement watch and the stand-ins too: before, an assignment whose components
    # forbade nothing was not scanned at all, and a watch switched off through torch._C went unflagged
    tree = mutant(tmp_path, {})
    (tree / LN).write_text((tree / LN).read_text() + "\nimport torch\n_off = torch._C.DisableTorchFunction\n")
    plain = replace(COURSE.assignment("assignment1"), components=tuple(
        replace(c, forbidden=()) for c in COURSE.assignment("assignment1").components))
    hits, flags = forbidden.judge(plain, tree, []).get("LayerNorm", ([], []))
    assert not hits and "torch._C" in {f.what for f in flags}, flags
    assert forbidden.judge(plain, mutant(tmp_path / "honest", {}), []) == {}


def test_constant_member_lookups_read_as_the_attribute(tmp_path):
    tree = mutant(tmp_path, {})
    (tree / LN).write_text("import torch.nn.functional as F\n"
                           "a = F.__dict__['layer_norm']\nb = getattr(F, 'layer_norm')\n"
                           "c = vars(F).get('layer_norm')\n")
    hits, _ = _judge(tree, "assignment1")["LayerNorm"]
    assert [h.where for h in hits] == [f"{LN}:2", f"{LN}:3", f"{LN}:4"]


# LayerNorm's forward by torch's own layer norm, reached through each tool of dynamic reach (issue 51, item 3):
# the channel -> (the forward's body, the flag it must raise). Each computes the right answer (the test runs
# it, but the fork's), so that under "count" the attack would earn every point its checks give it
_ARGS = "(x, (x.size(-1),), self.gamma, self.beta, self.eps)"
REACH = {
    "sys.modules": ("        import sys\n"
                    "        F = sys.modules['torch.nn.' + 'functional']\n"
                    f"        return F.layer_norm{_ARGS}\n", "sys.modules"),
    "torch._C": ("        fn = getattr(torch._C._VariableFunctions, 'native_layer' + '_norm')\n"
                 "        return fn(x, [x.size(-1)], self.gamma, self.beta, self.eps)[0]\n", "torch._C"),
    "torch.ops": ("        kernel = torch.ops.aten.native_layer_norm\n"
                  "        return kernel(x, [x.size(-1)], self.gamma, self.beta, self.eps)[0]\n", "torch.ops"),
    "torch.library": ("        import torch.library\n"
                      "        registry = torch.library.Library('aten', 'FRAGMENT')  # the operator registry\n"
                      "        kernel = getattr(torch.ops, registry.ns).native_layer_norm\n"
                      "        return kernel(x, [x.size(-1)], self.gamma, self.beta, self.eps)[0]\n", "torch.library"),
    "operator.attrgetter": ("        import operator\n"
                            "        kernel = operator.attrgetter('ops.aten.' + 'native_layer_norm')(torch)\n"
                            "        return kernel(x, [x.size(-1)], self.gamma, self.beta, self.eps)[0]\n",
                            "operator.attrgetter"),
    "operator.methodcaller": ("        import operator\n"
                              f"        call = operator.methodcaller('layer' + '_norm', *{_ARGS})\n"
                              "        return call(torch.nn.functional)\n", "operator.methodcaller"),
    "getattr": ("        fn = getattr(torch.nn.functional, 'layer' + '_norm')\n"
                f"        return fn{_ARGS}\n", "getattr with a computed name"),
    "gc": ("        import gc\n"
           "        F = next(o for o in gc.get_objects() if type(o) is type(torch)\n"
           "                 and o.__name__ == 'torch.nn.' + 'functional')\n"
           f"        return F.layer_norm{_ARGS}\n", "gc"),
    "ctypes": ("        import ctypes\n"
               "        ctypes.pythonapi.PyImport_ImportModule.restype = ctypes.py_object\n"
               "        F = ctypes.pythonapi.PyImport_ImportModule(b'torch.nn.functional')\n"
               f"        return F.layer_norm{_ARGS}\n", "ctypes"),
    "importlib": ("        import importlib\n"
                  "        F = importlib.import_module('torch.nn.' + 'functional')\n"
                  f"        return F.layer_norm{_ARGS}\n", "importlib"),
    "frames": ("        import sys\n"
               "        F = sys._getframe().f_globals['torch'].nn.functional\n"
               f"        return F.layer_norm{_ARGS}\n", "sys._getframe"),
    "os.fork": ("        import os, pickle\n"
                "        r, w = os.pipe()\n"
                "        if os.fork() == 0:  # the recorder sees nothing in the child\n"
                "            norm = torch.nn.functional.__dict__['layer' + '_norm']\n"
                f"            os.write(w, pickle.dumps(norm{_ARGS}.detach()))\n"
                "            os._exit(0)\n"
                "        os.close(w)\n"
                "        with os.fdopen(r, 'rb') as f:\n"
                "            return pickle.loads(f.read())\n", "os.fork"),
}


def _forward_of(tree: Path):
    """LayerNorm of `tree`'s layer_norm.py, imported under a name of its own (its file imports torch only)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_reach_{abs(hash(tree))}", tree / LN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LayerNorm


@pytest.mark.parametrize("channel", sorted(REACH))
def test_each_tool_of_dynamic_reach_gains_nothing_under_the_default_hold(tmp_path, channel):
    """Issue 51, item 3 (a flag is a score): each attack computes the right LayerNorm through a kernel or
    a module reached dynamically, where the worker's record may never see it (the submission can switch
    the recorder off). Scored as if it passed every check (its best case), under the course's default
    policy LayerNorm's points are held at 0 for review and the flag names the line; under "count" the
    same attack would keep all 10. Judged from the source alone (no grading: the end-to-end case is
    the attrgetter test above)."""
    import torch

    from grader.judging import scoring
    from grader.results import ComponentStatus
    from tests.kit.strategies import all_passed

    body, flag = REACH[channel]
    tree = mutant(tmp_path, {LN: [(LN_BODY, body)]})
    if channel != "os.fork":  # live: the attack is the right answer (the fork is not run inside pytest)
        x, norm = torch.randn(2, 3, 8), _forward_of(tree)(8)
        want = torch.nn.functional.layer_norm(x, (8,), norm.gamma, norm.beta, norm.eps)
        torch.testing.assert_close(norm(x), want)
    a1 = COURSE.assignment("assignment1")
    verdict = _judge(tree, "assignment1")
    assert set(verdict) == {"LayerNorm"}, verdict
    hits, flags = verdict["LayerNorm"]  # no name of a forbidden API: the flag alone decides
    assert not hits and flag in {f.what for f in flags}, (hits, flags)
    assert all(f.where.startswith(f"{LN}:") for f in flags), flags

    def graded(hold: bool) -> dict:
        judged = scoring.Judged(all_passed(a1), forbidden=verdict, hold=hold)
        return {c.name: c for c in scoring.components(a1, judged)}

    held, counted = graded(COURSE.flagged == "hold"), graded(False)
    assert held["LayerNorm"].score == 0 and all(c.score == c.max_score for n, c in held.items() if n != "LayerNorm")
    # held for review: the points its checks earned kept for an override; "count" would give them all
    assert held["LayerNorm"].status == ComponentStatus.HELD and held["LayerNorm"].held == 10
    assert counted["LayerNorm"].score == 10 and counted["LayerNorm"].status == ComponentStatus.PASSED


def test_the_attacks_said_flagged_are_those_the_scan_flags(tmp_path):
    """tests/kit/attacks.py says which of its attacks are flagged (their points held for review under the
    default policy: tests/kit/sandbox/test_adversarial.py and test_root.py hold them to it); the scan agrees."""
    from tests.kit.attacks import ATTACKS, FORK_BOMB, build

    for name, attack in {**ATTACKS, "fork_bomb": FORK_BOMB}.items():
        hits, flags = _judge(build(tmp_path / name, attack), "assignment1").get(attack.component, ([], []))
        assert {f.what for f in flags} == set(attack.flagged) and not hits, (name, hits, flags)
