"""Grading from a notebook, as a student in Jupyter or Colab does: a real kernel runs `!grade ...` and
`grader.check(...)`, and the saved notebook holds the report, without a spinner's frames."""

import json

import nbformat
from nbclient import NotebookClient

from tests.kit.conftest import mutant
from tests.kit.mutants import patches

# rich's "dots" spinner, whose every frame a notebook would keep
SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")


def text_of(output) -> str:
    if output["output_type"] == "stream":
        return output["text"]
    return "\n".join(str(v) for v in output.get("data", {}).values())


def test_a_notebook_holds_the_report_and_check_returns_it(tmp_path):
    tree = mutant(tmp_path, patches("no_sqrt_d_k"))
    json_path = tmp_path / "only.json"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import sys\nimport grader"),
        # a kernel sets FORCE_COLOR=1, which rich takes as a terminal: the spinner must still stay out
        nbformat.v4.new_code_cell(f"!{{sys.executable}} -m grader assignment2 --submission {tree} "
                                  f"--only sdpa_matches_torch --json {json_path}"),
        nbformat.v4.new_code_cell(f'report = grader.check("assignment2", {str(tree)!r}, only="sdpa_matches_torch")\n'
                                  'report["score"], type(report).__name__, '
                                  '[t["id"] for c in report["components"] for t in c["tests"]]'),
    ]
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    saved = tmp_path / "student.ipynb"
    nbformat.write(nb, saved)
    cells = nbformat.read(saved, as_version=4).cells

    shell = "".join(text_of(o) for o in cells[1].outputs)
    assert "sdpa_matches_torch" in shell and "score" in shell, shell
    assert not SPINNER & set(shell), shell
    assert "grading assignment2" not in shell, shell
    # --only: that check alone, in the report and in the JSON
    report = json.loads(json_path.read_text())
    assert [(c["name"], [(t["id"], t["status"]) for t in c["tests"]]) for c in report["components"]] == [
        ("scaled_dot_product_attention", [("sdpa_matches_torch", "failed")])]
    assert report["performance"] is None
    assert any(note.startswith("--only: 1 check run (sdpa_matches_torch)") for note in report["notes"])

    outputs = cells[2].outputs
    shown = [o for o in outputs if o["output_type"] == "display_data" and "text/html" in o["data"]]
    assert shown and "sdpa_matches_torch" in "".join(o["data"]["text/html"] for o in shown), outputs
    assert not SPINNER & set("".join(text_of(o) for o in outputs))
    result = [o for o in outputs if o["output_type"] == "execute_result"]
    assert result and result[0]["data"]["text/plain"] == "(0.0, 'dict', ['sdpa_matches_torch'])", outputs
