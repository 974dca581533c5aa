"""The target's own keywords reach the target (issue 56): they travel as one mapping (`kwargs=`) apart
from the kit's options (`seed`, `grad`, `to`, `method`, `how`), or, where a call reads as the
submission's own (`student.new(...)`, `module(x, ...)`, `module.method(name, ...)`), every keyword is
the target's. Through a real sandbox, on a solution tree with functions that echo their keywords."""

import shutil

import pytest
import torch

from grader import load_course
from grader.grading.pipeline import start_sandbox
from grader.suite.placement import How
from grader.suite.remote import Submission
from tests.kit.conftest import ROOT, SOLUTIONS

ECHO = '''

def keywords(*args, **kwargs):
    return dict(kwargs)


class Keywords(torch.nn.Module):
    def __init__(self, seed=None):
        super().__init__()
        self.built_with = seed

    def forward(self, x, seed=0, grad=None, method=None):
        return x * 0 + seed

    def echo(self, seed=None, grad=None):
        return [seed, grad]
'''
ECHOES, BUILD = "assignment1.layer_norm:keywords", "assignment1.layer_norm:Keywords"


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    tree = tmp_path_factory.mktemp("keywords") / "submission"
    shutil.copytree(SOLUTIONS, tree, ignore=shutil.ignore_patterns("__pycache__"))
    with open(tree / "assignment1" / "layer_norm.py", "a") as f:
        f.write(ECHO)
    course = load_course(ROOT / "course.toml")
    sandbox = start_sandbox(course=course, assignment=course.assignment("assignment1"), submission=tree)
    try:
        yield Submission(sandbox, None, course.reference)
    finally:
        sandbox.close()


def test_a_target_keyword_named_like_an_option_reaches_the_target(student):
    assert student.call(ECHOES, kwargs={"seed": 5, "grad": True, "kwargs": 1}) == {"seed": 5, "grad": True,
                                                                                    "kwargs": 1}
    assert student.call(ECHOES, 1, seed=3, grad=True) == {}  # the kit's options, none of them the target's
    assert student.call("torch:manual_seed", kwargs={"seed": 1234}) is not None  # torch.manual_seed(seed=1234)
    assert student.call("torch:initial_seed") == 1234


def test_a_constructor_forward_or_method_keyword_named_seed_is_the_submissions(student):
    module = student.new(BUILD, seed=7)
    assert module.attr("built_with") == 7
    x = torch.ones(2, 3)
    assert torch.equal(module(x, seed=3, grad=1, method=2), torch.full((2, 3), 3.0))
    assert module.method("echo", seed=4, grad=True) == [4, True]
    assert module.run("echo", kwargs={"seed": 5}, seed=11, grad=False) == [5, None]


def test_placed_and_backward_pass_the_targets_keywords_apart(student):
    module = student.new(BUILD)
    x = torch.ones(2, 3)
    answer = module.placed(x, to="cpu", kwargs={"seed": 2}, how=How(seed=9))
    assert torch.equal(answer["output"], torch.full((2, 3), 2.0)), answer
    output, _, _ = module.backward(x, grad_output=torch.ones(2, 3), wrt=(), kwargs={"seed": 6})
    assert torch.equal(output, torch.full((2, 3), 6.0))
