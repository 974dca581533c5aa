"""The kit's test tiers (tests/kit/tiering.py): a test's tier is read from what it and its helpers reach,
and a unit test that starts a process anyway fails."""

import os
import shutil

import pytest

from tests.kit import tiering
from tests.kit.conftest import grade_json, run_grade


def _pure(x):
    return sorted(x)


def _grades(tree):
    return grade_json(tree, "assignment1")


def _through_a_helper(tree):
    return _grades(tree)["score"]


def _browses(page):
    return shutil.which("chromium"), page


def _imports_the_warm_grader():
    from grader.grading.warm import Grader

    return Grader


class _Steps:
    def step(self):
        return run_grade("--help")

    def test_like(self):
        return self.step()


@pytest.mark.parametrize(("helper", "tiers"), [
    (_pure, set()), (_grades, {"sandbox"}), (_through_a_helper, {"sandbox"}), (_browses, {"browser"}),
    (_imports_the_warm_grader, {"sandbox"}), (run_grade, {"sandbox"}), (_Steps, {"sandbox"}),
])
def test_a_helpers_tier_is_what_it_reaches(helper, tiers):
    assert tiering.Reader().of(helper) == tiers


def test_a_method_reaches_what_its_classs_other_methods_do():
    assert tiering.Reader().of(_Steps.test_like, owner=_Steps) == {"sandbox"}


def test_this_module_is_unit_and_a_process_it_starts_anyway_is_refused(request):
    assert request.node.get_closest_marker("unit") is not None
    with pytest.raises(tiering.StartedAProcess, match="unit tier started a shell"):
        os.system("true")
    with pytest.raises(tiering.StartedAProcess, match="a process"):
        os.posix_spawn("/bin/true", ["true"], os.environ)
