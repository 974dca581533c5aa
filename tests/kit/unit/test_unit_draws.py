"""The instructor's second set is each submission's own, component by component (issue 51, per-grading
secrets): its seed mixes the course's secret seed with a digest of the component's own staged files
(grader.suite.draws.for_component)."""

from pathlib import Path

from grader.suite import draws

OWN = ["assignment1/layer_norm.py"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_same_files_draw_the_same_second_set_and_a_change_to_them_another(tmp_path):
    files = {"assignment1/layer_norm.py": "x = 1\n", "assignment1/__init__.py": ""}
    seed = draws.for_component(1729, _tree(tmp_path / "a", files), OWN)
    assert seed == draws.for_component(1729, _tree(tmp_path / "again", files), OWN)  # a regrade reproduces it
    changed = [{**files, "assignment1/layer_norm.py": "x = 2\n"},  # a resubmission
               {**files, "assignment1/layer_norm.py": ""},  # emptied
               {"assignment1/norm.py": "x = 1\n", "assignment1/__init__.py": ""}]  # renamed: the file is missing
    others = [draws.for_component(1729, _tree(tmp_path / f"c{i}", c), OWN) for i, c in enumerate(changed)]
    assert len({seed, *others}) == 1 + len(changed)
    assert draws.for_component(1730, tmp_path / "a", OWN) != seed  # another course's secret
    assert 0 <= seed < 2**62


def test_a_change_to_another_components_files_leaves_the_second_set_as_it_was(tmp_path):
    """Fixing a bug elsewhere never changes what this component's checks draw: it cannot newly find one here."""
    files = {"assignment1/layer_norm.py": "x = 1\n", "assignment1/feed_forward.py": "y = 1\n"}
    seed = draws.for_component(1729, _tree(tmp_path / "a", files), OWN)
    fixed = {**files, "assignment1/feed_forward.py": "y = 2\n", "assignment1/extra.py": ""}
    assert draws.for_component(1729, _tree(tmp_path / "b", fixed), OWN) == seed


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
