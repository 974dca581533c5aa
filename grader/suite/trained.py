"""The end-to-end training run, judged in the grader (issue 43, item 3; issue 51, item 2).

The run trains the submission's stack in its own process (grader.sandbox.child.fixtures), where the
submission can replace what reports on it: a train_epoch that never stepped the optimizer reported
the numbers of a trained model (8.4/14 against 1.4), and one that reported large losses for its first
steps made its own curve fall (4.2/14 against 1.4). So nothing the run says of itself is scored. It
sends back its trained weights and its own numbering of the tokens (the contract leaves the order of
the words open: the grader's numbering is not the run's, and a correct Vocab that numbers its words
in the order first seen lost 7 of 14 points when the grader used its own). In the instructors' tier
(the reference is there) the grader rebuilds the step-0 weights from the seed in the reference's
Transformer, loads the weights that came back into another, and finds the loss of both on the same
training batches (encoded with the run's numbering, batched with the reference's collate): that
drop is what the checks require (`JUDGED`). The exact match and the samples are its own decoding of
the held-out dates (the reference's greedy_decode). The run's loss curve never earns a point: the
public check fails on it as the student's run does (a bug is named alike in both grades), and passes
only with the grader's own drop. In the student's own tier (no reference) the numbers are the run's,
as before: a student can only deceive themself there.

A forged numbering cannot make weights better than they are: it relabels the tokens, and a model
that did not learn has the loss of one that did not learn under every relabelling.
"""

import math
from pathlib import Path

import torch

from grader.sandbox.child.tree import resolve
from grader.suite.checks import Mismatch
from grader.suite.reference import load

TARGET = "kit:train_date_task"
JUDGED = "judged"  # the key of the grader's own numbers in the answer the checks read; only the grader writes it
LOSS_BATCHES = 4  # of training, the first ones: the grader's own loss of the step-0 and the trained weights
MAX_TOKENS, MAX_TOKEN_CHARS = 4096, 64  # a numbering's bounds: the task has about 200 source and 13 target tokens
NOT_TRAINED = "Run `grade train assignment4` to see your model train and translate."


class Numbering:
    """A run's numbering of the tokens, as plain data: the ids its Vocab's encode gave the task's tokens,
    the tokens its decode gave each id. Specials have the contract's ids."""

    PAD, SOS, EOS, UNK = 0, 1, 2, 3

    def __init__(self, ids: dict[str, int], itos: list[str]):
        self.ids, self.itos = ids, itos

    def encode(self, tokens) -> list[int]:
        return [self.ids.get(t, self.UNK) for t in tokens]

    def decode(self, ids) -> list[str]:
        return [self.itos[i] if 0 <= i < len(self.itos) else "<unk>" for i in ids]

    def __len__(self) -> int:
        return len(self.itos)


def judge(got, reference: Path | None, kwargs: dict):
    """The run's answer `got` with the trained weights and the numbering taken out, and, where
    `reference` is given, its exact match, BLEU and samples the grader's own, and the grader's own loss
    of the step-0 and the trained weights under `JUDGED` ({"before", "after", "batches"})."""
    if not isinstance(got, dict):
        return got
    weights, numbering = got.pop("state", None), got.pop("numbering", None)
    got.pop(JUDGED, None)  # the worker's, in any tier: never taken for the grader's
    if reference is None:
        return got
    if not isinstance(weights, dict) or not all(type(k) is str and type(v) is torch.Tensor
                                                for k, v in weights.items()):
        raise Mismatch("the training run should send back its trained weights", expected="the trained state",
                       got=type(weights).__name__, hint=NOT_TRAINED)
    from grader.training import toytask

    task = toytask.make_task(seed=kwargs.get("seed", 0), n_train=kwargs["n_train"], n_valid=1,
                             n_test=kwargs["n_test"])
    vocabs = numberings(numbering, toytask.distinct_tokens(task))
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        return _judge(got, load(reference), weights, task, vocabs, kwargs)


def numberings(numbering, tokens: tuple[list[str], list[str]]) -> tuple[Numbering, Numbering]:
    """The run's (source, target) numberings, checked to be plain data within bounds; a Mismatch otherwise."""
    out = []
    for side, asked in zip(("src", "tgt"), tokens, strict=True):
        entry = numbering.get(side) if isinstance(numbering, dict) else None
        ids, itos = (entry.get("encode"), entry.get("decode")) if isinstance(entry, dict) else (None, None)
        if not (type(itos) is list and 4 <= len(itos) <= MAX_TOKENS
                and all(type(t) is str and len(t) <= MAX_TOKEN_CHARS for t in itos)
                and type(ids) is list and len(ids) == len(asked)
                and all(type(i) is int and 0 <= i < len(itos) for i in ids)):
            raise Mismatch("the training run should send back its vocabularies' numbering of the tokens",
                           expected=f"for the {side} side: the id of each of its {len(asked)} tokens, and the "
                                    f"token of each id (at most {MAX_TOKENS})", got=type(entry).__name__,
                           hint=NOT_TRAINED)
        out.append(Numbering(dict(zip(asked, ids, strict=True)), itos))
    return out[0], out[1]


def _judge(got: dict, pkg: str, weights: dict, task, vocabs: tuple[Numbering, Numbering], kwargs: dict) -> dict:
    from grader.training import library

    config = library.TrainConfig(**{k: v for k, v in kwargs.items() if k in library.TrainConfig.__dataclass_fields__})
    src_vocab, tgt_vocab = vocabs
    Transformer = resolve(pkg, "assignment3.transformer:Transformer")

    def transformer():
        return Transformer(len(src_vocab), len(tgt_vocab), d_model=config.d_model, n_heads=config.n_heads,
                           n_layers=config.n_layers, d_ff=config.d_ff, dropout=config.dropout,
                           max_len=config.max_len, pad_idx=Numbering.PAD, norm_first=config.norm_first).eval()

    torch.manual_seed(kwargs.get("seed", 0))  # as the run seeds its model: the step-0 weights, rebuilt
    start = transformer()
    batches = _batches(pkg, task, vocabs, config, seed=kwargs.get("seed", 0))
    loss_fn = resolve(pkg, "assignment4.training:LabelSmoothingLoss")(len(tgt_vocab), Numbering.PAD,
                                                                       smoothing=config.smoothing)
    model = transformer()
    # its parameters by the contract's names; its buffers (the positional table) are the reference's own:
    # a correct Transformer may name or keep those otherwise
    own = dict(model.named_parameters())
    if any(k not in weights or weights[k].shape != p.shape for k, p in own.items()):
        raise Mismatch("the trained weights that came back are not the contract's Transformer's",
                       expected=f"{len(own)} parameters named as the contract's", got=f"{len(weights)} tensors",
                       hint=NOT_TRAINED)
    for k, p in own.items():
        p.copy_(weights[k])
    judged = {"before": _loss(start, batches, loss_fn), "after": _loss(model, batches, loss_fn),
              "batches": LOSS_BATCHES}
    metrics = library.evaluate(pkg, model, task.test, src_vocab, tgt_vocab)  # the reference's greedy_decode
    samples = [[" ".join(s), " ".join(t), " ".join(h)]
               for (s, t), h in zip(task.test[:3], metrics["hypotheses"][:3], strict=True)]
    return {**got, "exact_match": float(metrics["exact_match"]), "bleu": float(metrics["bleu"]),
            "samples": samples, JUDGED: judged}


def _batches(pkg: str, task, vocabs: tuple[Numbering, Numbering], config, *, seed: int) -> list:
    """The run's first LOSS_BATCHES training batches, in its order, encoded with its own numbering and
    batched with the reference's collate."""
    from grader.training import toytask

    collate = resolve(pkg, "assignment4.data:collate")
    batches = toytask.iterate_batches(toytask.encode_pairs(task.train, *vocabs), collate, config.batch_size,
                                      Numbering.PAD, order=toytask.BatchOrder(seed=seed, repeat=True))
    return [next(batches) for _ in range(LOSS_BATCHES)]


def _loss(model, batches: list, loss_fn) -> float:
    """The mean of `loss_fn` over `batches` (a float, NaN or inf where the weights give that)."""
    seen = []
    for src, tgt_in, tgt_out in batches:
        logits = model(src, tgt_in)
        seen.append(float(loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))))
    mean = sum(seen) / len(seen)
    return mean if math.isfinite(mean) else float("inf")
