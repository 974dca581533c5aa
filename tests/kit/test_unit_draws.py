"""The instructor's second set is each submission's own (issue 51, per-grading secrets): its seed mixes the
course's secret seed with a digest of the submission's staged files (grader.suite.draws.for_submission)."""

from pathlib import Path

from grader.suite import draws


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_same_files_draw_the_same_second_set_and_any_change_another(tmp_path):
    files = {"assignment1/layer_norm.py": "x = 1\n", "assignment1/__init__.py": ""}
    seed = draws.for_submission(1729, _tree(tmp_path / "a", files))
    assert seed == draws.for_submission(1729, _tree(tmp_path / "again", files))  # a regrade reproduces it
    changed = [{**files, "assignment1/layer_norm.py": "x = 2\n"},  # a resubmission
               {"assignment1/norm.py": "x = 1\n", "assignment1/__init__.py": ""},  # a file renamed
               {**files, "assignment1/extra.py": ""}]  # a file added
    others = [draws.for_submission(1729, _tree(tmp_path / f"c{i}", c)) for i, c in enumerate(changed)]
    assert len({seed, *others}) == 1 + len(changed)
    assert draws.for_submission(1730, tmp_path / "a") != seed  # another course's secret
    assert 0 <= seed < 2**62


def test_a_second_set_is_the_instructors_alone():
    class Student:
        reference, fresh_seed = None, 7

    assert draws.second_set(Student(), "noam_lr_warms_up_then_decays") is None  # a student's run: no reference
    Student.reference = Path("solutions")
    a, b = (draws.second_set(Student(), "noam_lr_warms_up_then_decays").random() for _ in range(2))
    assert a == b != draws.second_set(Student(), "collate_shifts_the_target").random()
    Student.fresh_seed = None  # the bug table's runs
    assert draws.second_set(Student(), "noam_lr_warms_up_then_decays") is None


def test_a_failure_on_the_second_set_alone_is_named_as_such_among_the_others():
    """Not "not explained by" the diagnosis, which reads the student's draws only: failed on inputs drawn
    for this grading (collate_pads_with_zero fails collate's padding check there, with another pad id)."""
    from grader import words

    said = words.also(["a"], ["b"], ["h"], diagnosed=True, afresh=("c",))
    assert said.startswith("Also failed (4): 1 by the same bug; not explained by it: b; on inputs drawn for this "
                           "grading: c; hidden"), said
    assert words.also([], [], [], diagnosed=False, afresh=("c",)).startswith(
        "Also failed (1): on inputs drawn for this grading: c.")
    assert words.also([], ["b"], [], diagnosed=False) == "Also failed (1): b. grade --verbose shows each."
