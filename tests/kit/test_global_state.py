"""Global state a submission changes (at import or in a call) costs no other component its points."""

from tests.kit.conftest import full_marks, grade_json, mutant, scores

CONTAMINATE = (
    "\n\nimport warnings as _warnings\n"
    "torch.set_default_dtype(torch.float64)\n"
    "torch.set_grad_enabled(False)\n"
    "torch.set_anomaly_enabled(True)\n"
    "torch.use_deterministic_algorithms(True)\n"
    "_warnings.simplefilter('error')\n"
    "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n"
    "torch.Tensor.__ne__ = lambda self, other: torch.zeros((), dtype=torch.bool)\n"
    "torch.nn.functional.relu = lambda x, inplace=False: x\n"
)


def test_what_one_component_changes_at_import_or_in_a_call_reaches_no_other(tmp_path):
    """LayerNorm's module switches torch's global state at import and again in every forward."""
    tree = mutant(tmp_path, {"assignment1/layer_norm.py": [(
        "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n",
        "        torch.set_default_dtype(torch.float64)\n"
        "        torch.set_grad_enabled(False)\n"
        "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n")]})
    with open(tree / "assignment1" / "layer_norm.py", "a") as f:
        f.write(CONTAMINATE)
    report = grade_json(tree, "assignment1")
    others = {name: score for name, score in scores(report).items() if name != "LayerNorm"}
    assert others == {name: score for name, score in full_marks(report).items() if name != "LayerNorm"}, [
        (c["name"], t["id"], t["message"][:120]) for c in report["components"] for t in c["tests"]
        if t["status"] != "passed"]
