"""Excused told right (issue 52): with a part of an earlier assignment broken, the instructor's grade (the
course's own, with the reference) excuses every failure here that runs through it, so the points are
whole; the report says the model does not work yet and starts at that part, and each row says which
part its points were excused on. The tree is test_parity's (LayerNorm's first bug seen from assignment3):
the report cache shares its grade within a run."""

from tests.grading.bugs import BUGS
from tests.kit.conftest import as_json, grade_report, mutant, report_lines


def test_an_earlier_part_broken_is_not_full_marks_and_starts_there(tmp_path):
    graded = grade_report(mutant(tmp_path, BUGS["layer_norm_unbiased_variance"].patches), "assignment3")
    assert graded.score == graded.max_score and {c.status for c in graded.components} <= {"passed", "excused"}
    excused = [c.name for c in graded.components if c.status == "excused"]
    assert excused, [(c.name, c.status) for c in graded.components]
    lines = report_lines(graded)
    said = " ".join(" ".join(lines).replace("│", " ").split())
    assert "Full marks" not in said, said
    assert ("The points here are whole, but the model does not work yet: your LayerNorm "
            "(assignment1/layer_norm.py) fails its own checks") in said, said
    assert said.endswith("Start here: LayerNorm in assignment1/layer_norm.py (fails its own checks)"), said
    assert as_json(graded)["start_here"] == {"name": "LayerNorm", "file": "assignment1/layer_norm.py"}
    for name in excused:  # the row says what its points were excused on
        at = next(i for i, line in enumerate(lines) if line.startswith(f"│ {name} "))
        assert "excused: LayerNorm" in " ".join(" ".join(lines[at:at + 2]).replace("│", " ").split()), name
