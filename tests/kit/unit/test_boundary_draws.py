"""The trust boundary, draws: nothing in the instructor's grade is what a student's own run could have
recorded and answered from a table (issue 43, item 5). The public checks run there twice: on the
student's draws (so the bug table names a bug alike in both grades) and, where they passed and drew
anything, on a second set from course.toml's hidden_seed (grader.suite.draws)."""


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
