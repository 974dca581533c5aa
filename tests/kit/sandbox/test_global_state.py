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
    "_INFERENCE = torch.inference_mode()\n"  # entered for good: PositionwiseFeedForward lost 0.8 of 8 on main
    "_INFERENCE.__enter__()\n"
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


def test_autograd_switched_off_at_import_of_a_part_costs_train_epoch_nothing(tmp_path):
    """Issue 43's regression: LayerNorm's file switches autograd off at import. In assignment4's
    grading that file is first imported inside the kit's end-to-end training run, which used to train
    with autograd off (train_epoch 9.8/14, "element 0 of tensors does not require grad"): the worker
    imports the modules the training imports (fixtures.IMPORTS) before it runs, and puts the state back
    after."""
    tree = mutant(tmp_path, {})
    path = tree / "assignment1" / "layer_norm.py"
    path.write_text("import torch as _torch\n_torch.set_grad_enabled(False)\n" + path.read_text())
    report = grade_json(tree, "assignment4")
    assert scores(report) == full_marks(report), [
        (c["name"], t["id"], t["message"][:120]) for c in report["components"] for t in c["tests"]
        if t["status"] != "passed"]
