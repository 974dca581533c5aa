"""The kit's test tiers (tests/kit/tiering.py): a test's tier is its directory's, checked against what it and
its helpers reach (a test that reaches more, or a module outside the tier directories, is refused and told
where it belongs), and a unit test that starts a process anyway fails."""

import os
import shutil

import pytest

from tests.kit import tiering
from tests.kit.conftest import grade_json, run_grade
from tests.kit.tier_examples import _Steps


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


@pytest.mark.parametrize(("helper", "tiers"), [
    (_pure, set()), (_grades, {"sandbox"}), (_through_a_helper, {"sandbox"}), (_browses, {"browser"}),
    (_imports_the_warm_grader, {"sandbox"}), (run_grade, {"sandbox"}), (_Steps, {"sandbox"}),
])
def test_a_helpers_tier_is_what_it_reaches(helper, tiers):
    assert tiering.Reader().of(helper) == tiers


def test_this_module_is_unit_and_a_process_it_starts_anyway_is_refused(request):
    assert request.node.get_closest_marker("unit") is not None
    with pytest.raises(tiering.StartedAProcess, match="unit tier started a shell"):
        os.system("true")
    with pytest.raises(tiering.StartedAProcess, match="a process"):
        os.posix_spawn("/bin/true", ["true"], os.environ)


def test_a_test_that_reaches_what_its_directory_does_not_allow_is_told_where_it_belongs():
    said = tiering.misplaced("tests/kit/unit/test_x.py::test_y", "unit", {"sandbox"})
    assert said is not None and said.startswith("tests/kit/unit/test_x.py::test_y reaches the tier sandbox")
    assert "tests/kit/unit/ does not allow" in said and "it belongs in tests/kit/sandbox/" in said
    said = tiering.misplaced("t", "sandbox", {"sandbox", "browser"})
    assert said is not None and "tier browser" in said and "tier sandbox" not in said
    assert "it belongs in tests/kit/browser/" in said
    said = tiering.misplaced("t", "kernel", {"kernel", "container", "sandbox"})
    assert said is not None and "it belongs in tests/kit/container/" in said


def test_each_directory_allows_its_own_tier_and_the_heavy_ones_the_sandboxs_too():
    assert all(tiering.misplaced("t", tier, set()) is None for tier in tiering.TIERS)
    assert tiering.misplaced("t", "sandbox", {"sandbox"}) is None
    for tier in ("container", "browser", "kernel"):
        assert tiering.misplaced("t", tier, {tier, "sandbox"}) is None
        assert tiering.misplaced("t", "sandbox", {tier}) is not None
    assert tiering.markers("unit", set()) == {"unit"} and tiering.markers("sandbox", set()) == {"sandbox"}
    assert tiering.markers("container", {"container", "sandbox"}) == {"container", "sandbox"}
    assert tiering.markers("kernel", set()) == {"kernel"}


def test_a_test_module_outside_the_tier_directories_is_refused():
    assert tiering.directory(tiering.KIT / "unit" / "test_x.py") == "unit"
    assert tiering.directory(tiering.KIT / "kernel" / "test_x.py") == "kernel"
    assert tiering.directory(tiering.KIT / "test_x.py") is None
    assert tiering.directory(tiering.KIT / "other" / "test_x.py") is None
    said = tiering.misplaced("tests/kit/test_x.py::test_y", None, {"browser", "sandbox"})
    assert said is not None and said.startswith("tests/kit/test_x.py::test_y: a test module of the kit lives in")
    assert "it belongs in tests/kit/browser/" in said


def test_the_kits_test_modules_are_each_in_a_tier_directory():
    assert not sorted(tiering.KIT.glob("test_*.py"))
    assert {p.relative_to(tiering.KIT).parts[0] for p in tiering.KIT.rglob("test_*.py")} <= set(tiering.TIERS)
    for tier in tiering.TIERS:
        assert (tiering.KIT / tier / "__init__.py").is_file(), tier


def test_this_test_carries_its_directorys_marker_alone(request):
    assert {m.name for m in request.node.iter_markers() if m.name in tiering.TIERS} == {"unit"}
