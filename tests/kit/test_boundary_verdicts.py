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
