"""Isolated checks' stand-ins for the reference's parts, from the grader's side: it refuses a malformed
request from a stand-in, runs a reference module on the weights it is given as torch.func.functional_call
does, and builds a part asked for again from the same arguments as a fresh build; tensors and reference
modules drawn again are fresh copies of a first draw (code that relies on the contract's structure, and
gradients through stand-ins, graded: tests/kit/sandbox/test_structure.py)."""

import pytest
import torch

from grader.suite.parts.serve import ReferenceParts
from tests.kit.conftest import SOLUTIONS


def test_the_grader_refuses_malformed_requests_from_the_stand_ins():
    parts = ReferenceParts(call_back=None)
    ln = "assignment1.layer_norm:LayerNorm"
    parts.allow(SOLUTIONS, [ln])
    built = parts.answer({"build": ln, "args": [4], "kwargs": {}})
    assert built["tree"]["attrs"] == {"eps": 1e-5} and set(built["tree"]["parameters"]) == {"gamma", "beta"}
    good = {"forward": built["id"], "path": "", "args": [torch.ones(2, 4)], "kwargs": {}, "training": {"": False},
            "state": {"gamma": torch.ones(4), "beta": torch.zeros(4)}}
    assert parts.answer(good)["output"].shape == (2, 4)
    bad = [{"build": "assignment1.feed_forward:PositionwiseFeedForward", "args": [4, 8]},  # not swapped in
           {"build": ln, "args": [10**6]},  # too large
           {**good, "forward": built["id"] + 100}, {**good, "path": "nowhere"},
           {**good, "state": {"gamma": torch.ones(1), "beta": torch.zeros(4)}},  # would broadcast
           {**good, "state": {"gamma": torch.ones(4)}}, {**good, "training": {"": "yes"}},
           {**good, "grad": True, "params": ["nowhere"]}, {**good, "free": "all"},
           {"backward": 12345, "grads": [torch.ones(2, 4)]}, {"backward": built["id"], "grads": []}, ["forward"]]
    for message in bad:
        with pytest.raises((ValueError, AttributeError)):
            parts.answer(message)
    call = parts.answer({**good, "grad": True, "params": ["gamma"]})["call"]
    with pytest.raises(ValueError):
        parts.answer({"backward": call, "grads": [torch.ones(3, 4)]})
    grads = parts.answer({"backward": call, "grads": [torch.ones(2, 4)]})
    assert grads["inputs"][0].shape == (2, 4) and grads["params"][0].shape == (4,)
    parts.allow(None, ())
    assert not parts.graphs and not parts.built


class _Tied(torch.nn.Module):
    """Two places holding one weight (tied input and output embeddings), and a buffer."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.out = torch.nn.Linear(4, 6, bias=False)
        self.out.weight = self.embed.weight
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, ids):
        return self.out(self.embed(ids) * self.scale)  # (B, T, 6)


def test_a_reference_module_runs_on_given_weights_as_under_functional_call():
    from grader.suite.parts.layout import Layout, on_weights

    module = _Tied()
    own = {k: v.detach().clone() for k, v in module.state_dict().items()}
    layout = Layout.of(module)
    assert set(layout.weights) == {"embed.weight", "scale"}  # a tied weight is one name, held at two places
    g = torch.Generator().manual_seed(0)
    given = {"embed.weight": torch.randn(6, 4, generator=g).requires_grad_(), "scale": torch.tensor(3.0)}
    ids = torch.tensor([[0, 5, 2]])
    with on_weights(layout, given):
        out = module(ids)
    expected = torch.func.functional_call(module, given, (ids,))
    torch.testing.assert_close(out, expected)
    (grad,) = torch.autograd.grad(out.sum(), [given["embed.weight"]])
    (want,) = torch.autograd.grad(expected.sum(), [given["embed.weight"]])
    torch.testing.assert_close(grad, want)
    assert not torch.equal(out, module(ids))  # the given weights were used, not the module's own
    for k, v in module.state_dict().items():  # and the module's own are back
        assert torch.equal(v, own[k]), k


def test_a_part_built_again_from_the_same_arguments_is_described_and_seeded_as_a_fresh_build():
    ln, mha = "assignment1.layer_norm:LayerNorm", "assignment2.multi_head_attention:MultiHeadAttention"
    fresh = ReferenceParts(call_back=None)
    fresh.allow(SOLUTIONS, [ln, mha])
    first = fresh.answer({"build": mha, "args": [8, 2], "kwargs": {}})
    after_fresh = torch.default_generator.get_state()
    torch.manual_seed(123)  # somewhere else entirely
    again = fresh.answer({"build": mha, "args": [8, 2], "kwargs": {}})
    assert again["id"] != first["id"]
    assert torch.equal(torch.default_generator.get_state(), after_fresh)
    other = ReferenceParts(call_back=None)  # what a grader that never built it before describes
    other.allow(SOLUTIONS, [ln, mha])
    alone = other.answer({"build": mha, "args": [8, 2], "kwargs": {}})["tree"]

    def tensors(tree):
        yield from [*tree["parameters"].values(), *tree["buffers"].values()]
        for _, sub in tree["modules"]:
            yield from tensors(sub)

    assert all(torch.equal(a, b) for a, b in zip(tensors(again["tree"]), tensors(alone), strict=True))
    assert fresh.answer({"build": mha, "args": [8, 4], "kwargs": {}})["tree"] is not again["tree"]
    fresh.allow(SOLUTIONS, [ln])  # a later check without it: a cached build is not served
    with pytest.raises(ValueError):
        fresh.answer({"build": mha, "args": [8, 2], "kwargs": {}})


def test_drawn_tensors_and_reference_modules_drawn_again_are_fresh_copies_of_a_first_draw(monkeypatch):
    from tests import strategies as s
    from tests.grading.support import reference_module

    first = s.tensor([3, 4], 7, 0.5, 1.0)
    first += 100  # the caller's to change
    again = s.tensor([3, 4], 7, 0.5, 1.0)
    g = torch.Generator().manual_seed(7)
    assert torch.equal(again, (torch.randn(3, 4, generator=g, dtype=torch.float64) * 0.5 + 1.0).float())
    assert again is not s.tensor([3, 4], 7, 0.5, 1.0)
    monkeypatch.setattr(s, "_KEPT_BYTES", 64)  # room for one 3x4 float32 draw: the next one empties it first
    s.tensor([3, 4], 8)
    assert len(s._DRAWN) == 1 and s._kept_bytes == 48
    assert torch.equal(s.tensor([3, 4], 7, 0.5, 1.0), again)
    ln = "assignment1.layer_norm:LayerNorm"
    module = reference_module("solutions", ln, 6, seed=5)
    after = torch.default_generator.get_state()
    torch.manual_seed(123)  # somewhere else entirely
    assert reference_module("solutions", ln, 6, seed=5) is module
    assert torch.equal(torch.default_generator.get_state(), after)
    assert reference_module("solutions", ln, 6, seed=6) is not module
