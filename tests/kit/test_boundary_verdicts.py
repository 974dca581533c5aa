"""The trust boundary, verdicts: what the kit computes beside the submission is judged in the grader
(issue 43, item 3)."""

from tests.kit.conftest import grade_json, mutant, scores

NO_STEP = ("        optimizer.step()\n        if scheduler is not None:\n", "        if scheduler is not None:\n")
# the submission replaces the kit's training run, in its own process, by one that reports a trained
# model's numbers (it keeps the run's own answer otherwise: its trained weights are those of a model
# that never stepped)
FORGE_TRAINING = '''

def _forge():
    import sys
    for name, module in list(sys.modules.items()):
        kit = getattr(module, "KIT", None)
        if isinstance(kit, dict) and "train_date_task" in kit:
            real = kit["train_date_task"]

            def forged(*args, **kwargs):
                got = real(*args, **kwargs)
                n = len(got["losses"])
                got["losses"] = [3.0 - 2.9 * i / max(n - 1, 1) for i in range(n)]
                got["exact_match"], got["bleu"] = 1.0, 100.0
                return got
            kit["train_date_task"] = forged
            return


_forge()
'''


def test_a_forged_training_report_earns_what_the_training_earns(tmp_path):
    """train_epoch never steps the optimizer; the forger also reports a trained model's losses and
    exact match (8.4/14 on main against 1.4 without the forgery). The grader judges the weights that
    come back: the forgery earns what the honest never-stepping loop earns."""
    honest = scores(grade_json(mutant(tmp_path / "honest", {"assignment4/training.py": [NO_STEP]}), "assignment4"))
    forger = mutant(tmp_path / "forger", {"assignment4/training.py": [NO_STEP]})
    with open(forger / "assignment4" / "training.py", "a") as f:
        f.write(FORGE_TRAINING)
    forged = scores(grade_json(forger, "assignment4"))
    assert forged == honest and forged["train_epoch"] < 14, (forged, honest)


# LayerNorm makes a CPU tensor in forward: right on the CPU, wrong on a GPU (its placement check fails)
DEVICE_BUG = ("+ self.beta  # (..., d_model)", "+ self.beta * torch.ones(x.shape[-1])  # (..., d_model)")
# the submission turns the kit's placement watch, in its own process, into a pass-through: the CPU
# tensor then meets the meta inputs as an error that the placement check does not judge
FORGE_PLACEMENT = '''

def _forge():
    import sys
    for module in list(sys.modules.values()):
        watch = getattr(module, "Placement", None)
        if isinstance(watch, type) and hasattr(module, "on_a_second_device"):
            watch.__torch_function__ = lambda self, func, types, args=(), kwargs=None: func(*args, **(kwargs or {}))
            module.on_a_second_device = lambda *args, **kwargs: None


_forge()
'''


def test_a_forged_placement_watch_earns_nothing(tmp_path):
    """A LayerNorm with a device bug that also disables the kit's placement watch (10/10 on main, issue
    43's figure, against 9.17 without the forgery). The grader probes the watch after each placed run
    (grader.suite.placing): the forgery fails the placement check, and earns what the bug alone earns."""
    patch = {"assignment1/layer_norm.py": [DEVICE_BUG]}
    honest = grade_json(mutant(tmp_path / "honest", patch), "assignment1")
    forger = mutant(tmp_path / "forger", patch)
    with open(forger / "assignment1" / "layer_norm.py", "a") as f:
        f.write(FORGE_PLACEMENT)
    forged = grade_json(forger, "assignment1")
    assert scores(forged)["LayerNorm"] == scores(honest)["LayerNorm"] < 10, (scores(forged), scores(honest))
    [check] = [t for c in forged["components"] for t in c["tests"]
               if t["id"] == "layer_norm_stays_on_the_inputs_device"]
    assert check["status"] == "failed" and "watch" in check["message"], check
