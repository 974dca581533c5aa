"""The end-to-end training run, judged in the grader (issue 43, item 3).

The run trains the submission's stack in its own process (grader.sandbox.child.fixtures), where the
submission can replace what reports on it: a train_epoch that never stepped the optimizer reported
the numbers of a trained model (8.4/14 against 1.4). The run sends back its trained weights with its
numbers; in the instructors' tier (the reference is there) the grader loads them into the reference's
Transformer and judges them itself: the exact match and the samples are its own decoding of the
held-out dates (the reference's greedy_decode), and the reported losses must agree with the loss the
grader finds for those weights on the first training batches. In the student's own tier (no
reference) the numbers are the run's, as before: a student can only deceive themself there.
"""

import math
from pathlib import Path

import torch

from grader.suite.checks import Mismatch
from grader.suite.reference import load, resolve

TARGET = "kit:train_date_task"
LOSS_BATCHES = 4  # of training, the first ones: the grader's own loss of the trained weights
# the grader's loss on those may exceed the mean of the last 20 losses reported by this factor plus this
LOSS_FACTOR, LOSS_SLACK = 1.5, 0.3
NOT_TRAINED = "Run `grade train assignment4` to see your model train and translate."


def judge(got, reference: Path | None, kwargs: dict):
    """The run's answer `got` with the trained weights taken out, and, where `reference` is given, its
    exact match, BLEU and samples the grader's own; a Mismatch where the weights do not bear out the
    losses the run reported."""
    if not isinstance(got, dict):
        return got
    weights = got.pop("state", None)
    if reference is None:
        return got
    if not isinstance(weights, dict) or not all(type(k) is str and type(v) is torch.Tensor
                                                for k, v in weights.items()):
        raise Mismatch("the training run should send back its trained weights", expected="the trained state",
                       got=type(weights).__name__, hint=NOT_TRAINED)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        return _judge(got, load(reference), weights, kwargs)


def _judge(got: dict, pkg: str, weights: dict, kwargs: dict) -> dict:
    from grader.training import library, toytask

    task = toytask.make_task(seed=kwargs.get("seed", 0), n_train=kwargs["n_train"], n_valid=1,
                             n_test=kwargs["n_test"])
    config = library.TrainConfig(**{k: v for k, v in kwargs.items() if k in library.TrainConfig.__dataclass_fields__})
    Vocab = resolve(pkg, "assignment4.data:Vocab")
    src_vocab, tgt_vocab = toytask.build_vocabs(task, Vocab)
    pad = getattr(Vocab, "PAD", 0)
    torch.manual_seed(0)
    model = resolve(pkg, "assignment3.transformer:Transformer")(
        len(src_vocab), len(tgt_vocab), d_model=config.d_model, n_heads=config.n_heads, n_layers=config.n_layers,
        d_ff=config.d_ff, dropout=config.dropout, max_len=config.max_len, pad_idx=pad, norm_first=config.norm_first)
    # its parameters by the contract's names; its buffers (the positional table) are the reference's own:
    # a correct Transformer may name or keep those otherwise
    own = dict(model.named_parameters())
    if any(k not in weights or weights[k].shape != p.shape for k, p in own.items()):
        raise Mismatch("the trained weights that came back are not the contract's Transformer's",
                       expected=f"{len(own)} parameters named as the contract's", got=f"{len(weights)} tensors",
                       hint=NOT_TRAINED)
    for k, p in own.items():
        p.copy_(weights[k])
    model.eval()
    metrics = library.evaluate(pkg, model, task.test, src_vocab, tgt_vocab)  # the reference's greedy_decode
    _check_losses(got, pkg, model, task, (src_vocab, tgt_vocab), config)
    samples = [[" ".join(s), " ".join(t), " ".join(h)]
               for (s, t), h in zip(task.test[:3], metrics["hypotheses"][:3], strict=True)]
    return {**got, "exact_match": float(metrics["exact_match"]), "bleu": float(metrics["bleu"]),
            "samples": samples}


def _check_losses(got: dict, pkg: str, model, task, vocabs, config) -> None:
    from grader.training import toytask

    losses = got.get("losses")
    if not isinstance(losses, list) or not losses or not all(type(x) is float for x in losses):
        return  # the check says what is wrong with them
    reported = sum(losses[-20:]) / len(losses[-20:])
    collate = resolve(pkg, "assignment4.data:collate")
    pad = model.pad_idx
    loss_fn = resolve(pkg, "assignment4.training:LabelSmoothingLoss")(len(vocabs[1]), pad, smoothing=config.smoothing)
    batches = toytask.iterate_batches(toytask.encode_pairs(task.train, *vocabs), collate, config.batch_size, pad,
                                      order=toytask.BatchOrder(seed=0, repeat=True))
    seen = []
    for _ in range(LOSS_BATCHES):
        src, tgt_in, tgt_out = next(batches)
        logits = model(src, tgt_in)
        seen.append(float(loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))))
    mine = sum(seen) / len(seen)
    if math.isfinite(reported) and not mine <= LOSS_FACTOR * reported + LOSS_SLACK:
        raise Mismatch("the trained weights that came back do not have the loss the training reported",
                       expected=f"loss <= {LOSS_FACTOR} x {reported:.3f} + {LOSS_SLACK} (the last 20 reported)",
                       got=f"{mine:.3f}: the grader's own, on the first {LOSS_BATCHES} training batches",
                       hint=NOT_TRAINED)
