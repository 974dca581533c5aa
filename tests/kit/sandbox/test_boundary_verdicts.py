"""The trust boundary, verdicts: what the kit computes beside the submission is judged in the grader
(issue 43, item 3; issue 51, item 2)."""

import pytest

from tests.kit.conftest import earned, full_marks, grade_json, held, mutant, scores
from tests.kit.mutants import DATA_PIPELINE_VARIANTS

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
    report = grade_json(forger, "assignment4")
    forged = scores(report)
    # no gain: its checks earn what the honest loop's earn, and reaching into the kit through sys.modules
    # holds the file's components at 0 for review (the default `[policy] flagged = "hold"`)
    assert earned(report) == honest and honest["train_epoch"] < 14, (earned(report), honest)
    assert "train_epoch" in held(report) and all(forged[n] <= honest[n] for n in honest), (forged, honest)


# the same loop that never steps, reporting large losses for its first steps of the end-to-end run (one
# batch of 32 pairs a call): its own curve falls, its weights do not move
INFLATE = ("    return sum(losses) / max(len(losses), 1)",
           "    mean = sum(losses) / max(len(losses), 1)\n"
           "    if len(losses) == 1 and src.size(0) >= 32:  # the end-to-end run: one batch a call\n"
           "        model.calls = getattr(model, \"calls\", 0) + 1  # each run's own model\n"
           "        if model.calls <= 10:\n"
           "            return mean * 20  # a curve that falls: large losses for its first steps\n"
           "    return mean")


def test_a_loss_curve_that_falls_without_training_earns_what_the_training_earns(tmp_path):
    """train_epoch never steps the optimizer and reports large losses for its first steps (4.2/14 on main
    against 1.4 without the cheat: the grader compared only the tail of the reported curve with its own
    loss of the weights). The grader's own loss of the step-0 and the returned weights decides."""
    honest = scores(grade_json(mutant(tmp_path / "honest", {"assignment4/training.py": [NO_STEP]}), "assignment4"))
    cheat = scores(grade_json(mutant(tmp_path / "cheat", {"assignment4/training.py": [NO_STEP, INFLATE]}),
                              "assignment4"))
    assert cheat == honest and honest["train_epoch"] < 14, (cheat, honest)


@pytest.mark.parametrize("variant", sorted(DATA_PIPELINE_VARIANTS))
def test_a_data_pipeline_written_another_way_keeps_every_training_point(tmp_path, variant):
    """A Vocab that numbers its words in another order than the reference's (the contract leaves it open),
    collate by pad_sequence: full marks, the end-to-end training included (7/14 for train_epoch on main,
    where the grader encoded the batches of its own loss with the reference's Vocab)."""
    report = grade_json(mutant(tmp_path, DATA_PIPELINE_VARIANTS[variant]), "assignment4")
    assert scores(report) == full_marks(report), [
        (t["id"], t["message"], t.get("got")) for c in report["components"] for t in c["tests"]
        if t["status"] != "passed"]


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
    (grader.suite.placement): the forgery fails the placement check, and earns what the bug alone earns."""
    patch = {"assignment1/layer_norm.py": [DEVICE_BUG]}
    honest = grade_json(mutant(tmp_path / "honest", patch), "assignment1")
    forger = mutant(tmp_path / "forger", patch)
    with open(forger / "assignment1" / "layer_norm.py", "a") as f:
        f.write(FORGE_PLACEMENT)
    forged = grade_json(forger, "assignment1")
    # no gain: its checks earn what the bug alone earns, and the sys.modules reach holds LayerNorm at 0
    assert earned(forged)["LayerNorm"] == scores(honest)["LayerNorm"] < 10, (earned(forged), scores(honest))
    assert held(forged) == {"LayerNorm"} and scores(forged)["LayerNorm"] == 0, scores(forged)
    [check] = [t for c in forged["components"] for t in c["tests"]
               if t["id"] == "layer_norm_stays_on_the_inputs_device"]
    assert check["status"] == "failed" and "watch" in check["message"], check


# no tampering: the code refuses any device but the CPU, so that the meta run ends before the CPU tensor
# meets the input (issue 51: an error in the meta run was taken for "reads a value: nothing judged"); the
# second run, on a device that holds values, meets the same refusal
REFUSE_OFF_CPU = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n",
                  "        if x.device.type != 'cpu':\n"
                  "            raise RuntimeError('this LayerNorm runs on the CPU')\n"
                  "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n")


def test_code_that_refuses_every_device_but_the_cpu_earns_what_the_device_bug_earns(tmp_path):
    """The LayerNorm with the device bug, and an error raised wherever its input is not on the CPU: its own
    error on the meta device (one that does not name the meta device's limits) fails the placement check,
    as the bug does, and says why: its checks earn what the bug's earn. Its test of the device (not the
    CPU) is flagged besides, which holds its points for review."""
    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/layer_norm.py": [DEVICE_BUG]}), "assignment1")
    refusing = grade_json(mutant(tmp_path / "refusing", {"assignment1/layer_norm.py": [DEVICE_BUG, REFUSE_OFF_CPU]}),
                          "assignment1")
    assert earned(refusing)["LayerNorm"] == scores(honest)["LayerNorm"] < 10, (earned(refusing), scores(honest))
    assert not held(honest) and held(refusing) == {"LayerNorm"}
    [check] = [t for c in refusing["components"] for t in c["tests"]
               if t["id"] == "layer_norm_stays_on_the_inputs_device"]
    assert check["status"] == "failed" and "raises off the CPU" in check["message"], check
    assert "this LayerNorm runs on the CPU" in check["got"], check


# a value read before the device bug: on `meta` torch itself refuses it (.item() of a meta tensor), an error
# naming the meta device that was taken for "reads a value: nothing judged" (10/10 with the bug). Code may
# read values; a GPU runs it where the data is, and so does the worker's second device that holds values
READS_A_VALUE = ("        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n",
                 "        if bool(torch.isnan(x).any()):\n"
                 "            raise ValueError('x holds NaN')\n"
                 "        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)\n")


def test_a_device_bug_behind_a_value_read_costs_what_the_device_bug_costs(tmp_path):
    """The LayerNorm with the device bug reads a value first (`if torch.isnan(x).any()`), which the meta
    device cannot run: the worker runs it again on a device that holds the values (grader.sandbox.child.placement.held),
    where the CPU tensor meets the inputs. It earns what the bug alone earns; the same read in correct code
    keeps every point."""
    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/layer_norm.py": [DEVICE_BUG]}), "assignment1")
    reading = grade_json(mutant(tmp_path / "reading", {"assignment1/layer_norm.py": [DEVICE_BUG, READS_A_VALUE]}),
                         "assignment1")
    assert scores(reading)["LayerNorm"] == scores(honest)["LayerNorm"] < 10, (scores(reading), scores(honest))
    [check] = [t for c in reading["components"] for t in c["tests"]
               if t["id"] == "layer_norm_stays_on_the_inputs_device"]
    assert check["status"] == "failed" and "mixes devices" in check["message"], check
    assert "lazy:0" in check["message"], check
    correct = grade_json(mutant(tmp_path / "correct", {"assignment1/layer_norm.py": [READS_A_VALUE]}), "assignment1")
    assert scores(correct) == full_marks(correct) and not held(correct), scores(correct)


# the device bug made right on the placement check's devices alone (`meta`, and the worker's second device,
# `lazy`): by their names, or told apart without them (not the CPU; the device's text)
TELLS = {"by_name": "x.device.type in ('meta', 'lazy')", "not_the_cpu": "x.device.type != 'cpu'",
         "by_text": "str(x.device)[0] in 'ml'"}


@pytest.mark.parametrize("tell", list(TELLS))
def test_code_that_tests_for_the_placement_checks_devices_is_held_for_review(tmp_path, tell):
    """The LayerNorm with the device bug, right where its input is on `meta` or `lazy`: it passes the
    placement check (10/10 with nothing flagged, against 9.17 for the bug alone, before a test of the
    device was flagged). The test is flagged, with its line, and under the default `[policy] flagged =
    "hold"` the component's points are held at 0."""
    honest = grade_json(mutant(tmp_path / "honest", {"assignment1/layer_norm.py": [DEVICE_BUG]}), "assignment1")
    telling = grade_json(mutant(tmp_path / "telling", {"assignment1/layer_norm.py": [(
        "+ self.beta  # (..., d_model)", f"+ self.beta * (torch.ones(x.shape[-1], device=x.device) if {TELLS[tell]}"
        " else torch.ones(x.shape[-1]))  # (..., d_model)")]}), "assignment1")
    [layer_norm] = [c for c in telling["components"] if c["name"] == "LayerNorm"]
    checks = {c["id"]: c["status"] for c in layer_norm["tests"]}
    assert all(status == "passed" for status in checks.values()), checks  # the tell works: nothing fails
    assert not held(honest) and held(telling) == {"LayerNorm"}, (scores(telling), scores(honest))
    [flag] = layer_norm["flagged"]
    assert flag["what"] == "a test for the placement check's devices (meta, lazy)", flag
    assert flag["where"].startswith("assignment1/layer_norm.py:"), flag


MHA_BODY = "        ### BEGIN SOLUTION\n        B, T_q, _ = q.shape"
LIAR = ("        class Liar(torch.Tensor):  # every comparison, every reduction, every conversion: True\n"
        "            @classmethod\n"
        "            def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "                return True\n"
        "        return torch.zeros_like(q).as_subclass(Liar)\n")


def test_attention_answering_with_a_tensor_subclass_whose_comparisons_lie_earns_no_more_than_zeros(tmp_path):
    """A MultiHeadAttention that returns zeros as a tensor subclass whose every torch function answers True
    (issue 51: 2.82/16 against 1.88 for plain zeros, a regression of an earlier round's fix). What a check
    judges is rebuilt from the values the worker sends, as plain tensors: the lie earns no more than zeros."""
    def graded(name: str, body: str) -> dict:
        return scores(grade_json(mutant(tmp_path / name, {"assignment2/multi_head_attention.py": [
            (MHA_BODY, "        ### BEGIN SOLUTION\n" + body + "        B, T_q, _ = q.shape")]}), "assignment2"))

    zeros, liar = graded("zeros", "        return torch.zeros_like(q)\n"), graded("liar", LIAR)
    assert liar["MultiHeadAttention"] <= zeros["MultiHeadAttention"] < 16, (liar, zeros)
    assert {n: s for n, s in liar.items() if n != "MultiHeadAttention"} == {
        n: s for n, s in zeros.items() if n != "MultiHeadAttention"}, (liar, zeros)
