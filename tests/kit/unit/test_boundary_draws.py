"""The trust boundary, draws: a check's tier, which decides whether its public checks run again on a
second set from course.toml's hidden_seed, is the suites' own folder, never one above where the course is
kept (the second set itself, graded: tests/kit/sandbox/test_boundary_draws.py)."""


def test_the_tier_is_the_suites_own_folder_not_one_above_where_the_course_is_kept(tmp_path):
    """A course kept under a folder named `public` (or `hidden`) ran its hidden checks twice (the second
    pass's failures worded as drawn afresh), or drew the student's public properties from hidden_seed."""
    from types import SimpleNamespace

    from grader.suite.plugin import GradingPlugin

    suites = tmp_path / "hidden" / "public" / "kit" / "tests" / "grading"
    for tier in ("public", "hidden"):
        (suites / tier).mkdir(parents=True)
    plugin = SimpleNamespace(suites=suites.resolve())
    for tier in ("public", "hidden"):
        item = SimpleNamespace(path=suites / tier / "test_assignment1.py")
        assert GradingPlugin._tier(plugin, item) == tier  # type: ignore[arg-type]
    assert GradingPlugin._tier(plugin, SimpleNamespace(path=tmp_path / "hidden" / "x.py")) == ""  # type: ignore[arg-type]
