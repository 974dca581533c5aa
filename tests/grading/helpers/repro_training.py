"""`grade --repro` recipes for train_epoch and greedy_decode (repro_data.py registers them). Their checks run
on the kit's tiny model (grader.sandbox.child.fixtures.TinyTranslator, torch only): the script carries its
class, as source, and the weights the check drew, as numbers, so that it needs nothing of the kit."""

import inspect

import torch

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from grader.sandbox.child.fixtures import TinyTranslator
from tests.grading.helpers.names import GREEDY, PAD_ID, TRAIN_EPOCH
from tests.grading.helpers.training import train_epoch_expected


def _model(vocab: int, seed: int, **ids) -> str:
    """The tiny model's class and `state`, its weights as the check drew them (TinyTranslator(vocab, vocab,
    init=seed)); `make()` builds it in train() mode, as a new module is when the check hands it over."""
    state = TinyTranslator(vocab, vocab, init=seed, **ids).state_dict()
    given = "".join(f", {k}={v!r}" for k, v in ids.items())
    return f'''
# the grader's tiny translation model (its TinyTranslator), with the weights the check gave it
{inspect.getsource(TinyTranslator)}

state = {literal(dict(state))}


def make():
    model = TinyTranslator({vocab}, {vocab}{given})
    model.load_state_dict(state)
    return model.train()  # a new module's mode: the check hands it over as it is
'''


def _batches(ex: dict) -> list:
    return [tuple(torch.tensor(t, dtype=torch.long) for t in batch) for batch in ex["data"]]


def _train_setup(ex: dict) -> str:
    return f'''
# the batches (src, tgt_in, tgt_out) as collate makes them, pad id {PAD_ID}
batches = {literal(_batches(ex))}
lr = {ex["lr"]!r}
{_model(9, ex["seed"])}

def run(train_epoch, scheduler=None):
    """(what train_epoch returned, the model after it): SGD(lr, momentum=0.5), CrossEntropyLoss(ignore_index=0)."""
    model = make()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index={PAD_ID})
    return train_epoch(model, batches, optimizer, loss_fn, scheduler), model


def number(name, value):
    """`value` as a float, where it is a finite real number (not a bool, not a tensor); else None, saying so."""
    if type(value) is bool or not isinstance(value, (int, float)) or not math.isfinite(value):
        print(f"{{name}} should be a finite number, got {{value!r}}")
        return None
    return float(value)
'''


def _train_updates(ex: dict) -> str:
    _, want = train_epoch_expected(_batches(ex), ex["seed"], ex["lr"])
    return f'''{_train_setup(ex)}
# the parameters after the epoch, by the definition (per batch: zero_grad, forward, loss, backward, step)
expected = {literal(dict(want))}


def main() -> int:
    train_epoch = load("{TRAIN_EPOCH}")
    show(batches=batches, lr=lr)
    _, model = run(train_epoch)
    got = model.state_dict()
    if all(torch.equal(got[k], state[k]) for k in state):
        print("--- the parameters did not change: train_epoch should update them")
        return verdict(False)
    ok = True
    for name, want in expected.items():
        ok &= compare(f"parameter {{name}} after the epoch", got[name], want, atol=1e-5)
    return verdict(ok)
'''


def _train_mean(ex: dict) -> str:
    want, _ = train_epoch_expected(_batches(ex), ex["seed"], ex["lr"])
    return f'''{_train_setup(ex)}
# the mean of the batch losses (each taken before its batch's update), by the definition
expected = {want!r}


def main() -> int:
    train_epoch = load("{TRAIN_EPOCH}")
    show(batches=batches, lr=lr)
    got = number("train_epoch's result", run(train_epoch)[0])
    if got is None:
        return verdict(False)
    print("expected:", repr(expected))
    print("got:     ", repr(got))
    return verdict(math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-6))
'''


def _train_scheduler(ex: dict) -> str:
    return f'''{_train_setup(ex)}

class CountingScheduler:
    """Counts its step() calls."""

    def __init__(self):
        self.steps = 0

    def step(self):
        self.steps += 1


def main() -> int:
    train_epoch = load("{TRAIN_EPOCH}")
    show(batches=batches, lr=lr)
    scheduler = CountingScheduler()
    run(train_epoch, scheduler)
    print(f"=== scheduler.step() calls: expected {{len(batches)}} (one per batch), got {{scheduler.steps}}")
    if scheduler.steps != len(batches):
        return verdict(False)
    print("=== without a scheduler (None): train_epoch should still return the mean loss")
    return verdict(number("train_epoch's result without a scheduler", run(train_epoch, None)[0]) is not None)
'''


def _greedy(ex: dict) -> str:
    src, max_len, sos, eos, pad = ex["src"], ex["max_len"], ex["sos_idx"], ex["eos_idx"], ex["pad_idx"]
    ids = dict(pad_idx=pad, sos_idx=sos, eos_idx=eos)
    return f'''
src = {literal(src)}
max_len, sos_idx, eos_idx, pad_idx = {max_len!r}, {sos!r}, {eos!r}, {pad!r}
{_model(ex["vocab"], ex["seed"], **ids)}

def first_departure(ys):
    """Greedy decoding's definition, on this model in eval() mode, checked position by position on your
    output: each token should be the argmax of model(src, ys[:, :t])[:, -1] given your tokens before it,
    or pad_idx once its row has emitted eos_idx. (row, position, that token) where it is not; else None."""
    model, done = make().eval(), torch.zeros(ys.size(0), dtype=torch.bool)
    with torch.no_grad():
        for t in range(1, ys.size(1)):
            want = model(src, ys[:, :t])[:, -1].argmax(-1).masked_fill(done, pad_idx)
            wrong = torch.nonzero(ys[:, t] != want)
            if len(wrong):
                b = int(wrong[0, 0])
                return b, t, int(want[b])
            done |= ys[:, t] == eos_idx
    return None


def main() -> int:
    greedy_decode = load("{GREEDY}")
    show(src=src, max_len=max_len, sos_idx=sos_idx, eos_idx=eos_idx)
    got = greedy_decode(make(), src, max_len, sos_idx, eos_idx)
    B = src.size(0)
    if not isinstance(got, torch.Tensor) or got.dtype != torch.long:
        print(f"greedy_decode should return a torch.long tensor, got {{got!r}}")
        return verdict(False)
    print("got:", got, sep="\\n")
    if got.dim() != 2 or got.size(0) != B or not 1 <= got.size(1) <= max_len:
        print(f"--- the shape should be ({{B}}, L) with 1 <= L <= max_len = {{max_len}}, got {{tuple(got.shape)}}")
        return verdict(False)
    if not bool((got[:, 0] == sos_idx).all()):
        print(f"--- column 0 should be sos_idx = {{sos_idx}} in every row")
        return verdict(False)
    departs = first_departure(got)
    if departs is not None:
        b, t, want = departs
        print(f"--- row {{b}}, position {{t}} should be {{want}}: expected {{got[b, :t].tolist() + [want]}}",
              "up to there")
        return verdict(False)
    ended = (got[:, 1:] == eos_idx).any(dim=1)
    if got.size(1) < max_len and not bool(ended.all()):
        print(f"--- a row has emitted no eos_idx by column {{got.size(1)}}:",
              f"decoding should go on to max_len = {{max_len}}")
        return verdict(False)
    return verdict(True)
'''


_GREEDY = ("src", "max_len", "sos_idx", "eos_idx", "pad_idx", "seed", "vocab")
TRAINING_RECIPES: dict[str, Recipe] = {
    "train_epoch_updates_like_the_definition": Recipe(("data", "seed", "lr"), _train_updates),
    "train_epoch_returns_the_mean_batch_loss": Recipe(("data", "seed", "lr"), _train_mean),
    "train_epoch_steps_the_scheduler_once_per_batch": Recipe(("data", "seed", "lr"), _train_scheduler),
    **{check: Recipe(_GREEDY, _greedy) for check in (
        "greedy_decode_matches_teacher_forced_argmax", "greedy_decode_matches_the_definition",
        "greedy_decode_stops_at_eos_and_pads_after", "greedy_decode_respects_max_len",
        "greedy_decode_runs_in_eval_mode")},
}
TRAINING_WHY_NOT: dict[str, str] = {}
