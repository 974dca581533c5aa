"""The trust boundary, reference parts (issue 43, item 2): sizing what a stand-in asks the grader to build
before it is built changes nothing an honest part is (the bounds per part and per grading:
tests/kit/unit/test_boundary_parts.py)."""

import torch

from tests.kit.conftest import ROOT
from tests.kit.reference_parts import ENCODER, _parts


def test_a_sized_build_is_the_same_build():
    """The sizing changes nothing an honest part is: the same weights, drawn from the same seed."""
    from grader.sandbox.child import state
    from grader.sandbox.child.tree import resolve
    from grader.suite.reference import load

    parts = _parts()
    got = parts.answer({"build": ENCODER, "args": [2, 16, 2, 32], "kwargs": {}})["tree"]
    state.seed(0)
    want = resolve(load(ROOT / "solutions"), ENCODER)(2, 16, 2, 32).state_dict()

    def flat(tree, prefix=""):
        out = {f"{prefix}{k}": v for k, v in {**tree["parameters"], **tree["buffers"]}.items()}
        for name, child in tree["modules"]:
            out.update(flat(child, f"{prefix}{name}."))
        return out

    have = flat(got)
    assert have.keys() == want.keys() and all(torch.equal(have[k], want[k]) for k in want)
