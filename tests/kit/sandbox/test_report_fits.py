"""The report as a student reads it (issue 37): a deleted file is one line naming it, a file that does not
import shows no example (none of the inputs matters), and two failing components fit one screen."""

import shutil

from tests.kit.conftest import SOLUTIONS, grade_report, mutant, report_lines
from tests.kit.mutants import patches

ONE_SCREEN = 45  # lines at 100 columns


def test_a_deleted_component_file_is_one_line_naming_it(tmp_path):
    tree = tmp_path / "submission"
    shutil.copytree(SOLUTIONS, tree)
    (tree / "assignment1" / "layer_norm.py").unlink()
    lines = report_lines(grade_report(tree, "assignment1"))
    said = [line for line in lines if "layer_norm.py is missing" in line]
    assert said and "assignment1/layer_norm.py is missing" in said[0], "\n".join(lines)
    assert not any("submission.assignment1" in line or "ModuleNotFoundError" in line for line in lines), lines
    panel = lines[lines.index(next(line for line in lines if "LayerNorm: 0 / 10" in line)):]
    assert len(panel[:panel.index(next(line for line in panel if line.startswith("╰")))]) <= 3, "\n".join(lines)


def test_a_syntax_error_shows_no_example(tmp_path):
    broken = ("class LayerNorm(nn.Module):", "class LayerNorm(nn.Module:")
    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [broken]})
    lines = report_lines(grade_report(tree, "assignment1"))
    assert any("SyntaxError" in line for line in lines), "\n".join(lines)
    assert not any("example" in line or "Activations(" in line for line in lines), "\n".join(lines)


def test_two_failing_components_fit_one_screen_at_100_columns(tmp_path):
    # the pair that took the most lines (62 before issue 37): a diagnosis, a parts note, a long example
    result = grade_report(mutant(tmp_path, patches("no_sqrt_d_k", "heads_split_with_the_wrong_view")), "assignment2")
    lines = report_lines(result, width=100)
    assert len(lines) <= ONE_SCREEN, "\n".join(lines)
    assert sum(line.startswith("╭─ ") for line in lines) == 2 and "--verbose" in "\n".join(lines), lines
