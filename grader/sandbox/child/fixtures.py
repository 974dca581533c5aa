"""Objects the grading suites build inside the submission's process (`kit:NAME` targets).

They stand in for what a check needs around the component it grades: a sublayer for a
ResidualConnection, a scheduler that counts its steps, a small translator for decoding
and training loops, and the end-to-end training run itself.
"""

import torch

SUBMISSION = "submission"  # the package the submission's tree is imported as


class LinearSublayer:
    """A sublayer the grader can pass to `ResidualConnection.forward`."""

    def __init__(self, weight, bias):
        self.weight, self.bias = weight, bias

    def __call__(self, x):
        return torch.tanh(torch.nn.functional.linear(x, self.weight.to(x.device), self.bias.to(x.device)))


class CountingScheduler:
    """Counts `step()` calls, so `train_epoch` can be checked to step the scheduler once a batch."""

    def __init__(self, optimizer=None):
        self.steps = 0

    def step(self):
        self.steps += 1


class TinyTranslator(torch.nn.Module):
    """A small seq2seq model with the Transformer's interface (encode, decode, projection,
    pad_idx, forward), causal by construction and deterministic in eval() mode, so that
    `greedy_decode` and `train_epoch` can be graded without the submission's Transformer.

    It uses the masks it is given, as the contract's Transformer does, so that a caller that
    leaves one out decodes differently: `encode` zeroes the source positions src_mask drops
    (without it, padding counts, and the source looks longer), and `decode` mixes the target
    embeddings twice over the positions tgt_mask allows (without it, position t sees later
    ones, which the last position's output shows through the second mix). `forward` builds
    the contract's masks itself (the padding of src; the padding of tgt and the causal mask).
    The decoder output is that mix plus a summary of the source; one extra feature fires when
    t + 1 equals the source length and pushes the <eos> logit (id `eos_idx`) up, so rows of
    different source lengths end at different steps. <pad> and <sos> are never predicted. In
    train() mode the features are reversed, which changes the predictions: decoding in train
    mode shows.
    """

    D = 8  # the width of its embeddings: small, and no check needs another

    def __init__(self, src_vocab: int, tgt_vocab: int, pad_idx: int = 0, sos_idx: int = 1, eos_idx: int = 2,
                 init: int = 0):
        super().__init__()
        d = self.D
        g = torch.Generator().manual_seed(init)  # the weights' seed
        self.pad_idx, self.eos_idx = pad_idx, eos_idx
        self.src_emb = torch.nn.Embedding(src_vocab, d)
        self.tgt_emb = torch.nn.Embedding(tgt_vocab, d)
        self.projection = torch.nn.Linear(d + 1, tgt_vocab)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
            self.projection.weight[:, d] = -4.0
            self.projection.weight[eos_idx, d] = 12.0
            self.projection.bias[pad_idx] = self.projection.bias[sos_idx] = -30.0  # never predicted

    def encode(self, src, src_mask=None):
        B, S = src.shape
        keep = torch.ones(B, S, dtype=torch.bool, device=src.device) if src_mask is None \
            else src_mask.reshape(B, S)  # (B, S)
        return torch.tanh(self.src_emb(src)) * keep.unsqueeze(-1)  # (B, S, d)

    def decode(self, memory, src_mask, tgt, tgt_mask=None):
        B, T = tgt.shape
        see = torch.ones(B, T, T, dtype=torch.bool, device=tgt.device) if tgt_mask is None \
            else tgt_mask.expand(B, 1, T, T).reshape(B, T, T)  # (B, T, T) query t sees key s
        mix = see.to(memory.dtype)
        mix = mix / mix.sum(-1, keepdim=True).clamp(min=1)  # (B, T, T) a mean over what t sees
        h = torch.tanh(mix @ self.tgt_emb(tgt))  # (B, T, d)
        h = torch.tanh(mix @ h + memory.sum(dim=1, keepdim=True))  # (B, T, d)
        if self.training:
            h = h.flip(-1)
        steps = torch.arange(1, T + 1, device=tgt.device)  # (T,)
        n_src = (memory.abs().sum(-1) > 0).sum(-1)  # (B,) source length
        end = (steps[None, :] == n_src[:, None]).to(h.dtype).unsqueeze(-1)  # (B, T, 1)
        return torch.cat([h, end], dim=-1)  # (B, T, d + 1)

    def forward(self, src, tgt):
        T = tgt.size(1)
        src_mask = (src != self.pad_idx)[:, None, None, :]  # (B, 1, 1, S)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()  # (T, T)
        tgt_mask = (tgt != self.pad_idx)[:, None, None, :] & causal  # (B, 1, T, T)
        return self.projection(self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask))


def train_date_task(*, seed: int = 0, n_train: int = 4000, n_test: int = 200, target: float | None = None,
                    every: int = 100, **config):
    """Train a tree's whole assignment4 stack on the bundled date task; return the metrics.

    Runs inside the sandbox on the submission (`grader.training.library` uses the tree's own Transformer,
    Vocab, collate, LabelSmoothingLoss, noam_lr and train_epoch: train_epoch's parts, swapped for the
    reference's where they fail their own checks). The test sentences are scored teacher-forced
    (`teacher_forced`), which for a causal model is the exact match of greedy decoding, without a greedy
    decoder: greedy_decode is graded on its own, and the student kit ships none (issue 51). In the
    instructor's grade the grader decodes the returned weights itself (grader.suite.trained).

    `target`: evaluate every `every` steps and stop once the exact match reaches it. Scoring leaves the
    weights, the mode and the random stream as they were, so the steps taken are those of a full run.
    `config`: TrainConfig's settings (`steps` 1000 unless given).
    """
    from grader.training import library, toytask

    task = toytask.make_task(seed=seed, n_train=n_train, n_valid=1, n_test=n_test)
    settings = library.TrainConfig(**{"steps": 1000, **config})
    scored: dict[int, dict] = {}

    def score(model, history) -> dict:
        was_training = model.training
        with torch.random.fork_rng(devices=[]):  # a model that draws in eval mode leaves training's draws alone
            metrics = teacher_forced(model, task.test, history.src_vocab, history.tgt_vocab)
        model.train(was_training)
        return metrics

    def reached(step, model, history) -> bool:
        if target is None or step % every:
            return False
        scored[step] = score(model, history)
        return scored[step]["exact_match"] >= target

    model, history = library.fit(SUBMISSION, task, settings, seed=seed,
                                 options=library.FitOptions(threads=None, until=reached))
    metrics = scored.get(len(history.losses)) or score(model, history)
    samples = [[" ".join(s), " ".join(t), " ".join(h)]
               for (s, t), h in zip(task.test[:3], metrics["hypotheses"][:3], strict=True)]
    # no BLEU here: it is of greedy decoding's output, which the grader computes; the trained weights
    # go back too, with the run's own numbering of the tokens (the contract leaves the
    # order of the words open): the grader judges the weights itself, on that numbering (grader.suite.trained)
    numbering = {side: {"encode": [int(i) for i in vocab.encode(tokens)],
                        "decode": [str(t) for t in vocab.decode(list(range(len(vocab))))]}
                 for side, vocab, tokens in zip(("src", "tgt"), (history.src_vocab, history.tgt_vocab),
                                                toytask.distinct_tokens(task), strict=True)}
    return {"losses": [float(x) for x in history.losses], "exact_match": float(metrics["exact_match"]),
            "bleu": None, "samples": samples, "numbering": numbering,
            "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}


def teacher_forced(model, pairs, src_vocab, tgt_vocab, batch_size: int = 256) -> dict:
    """{"exact_match", "hypotheses"} of `model` on `pairs`, teacher-forced through the tree's own collate:
    a sentence is matched where every position's argmax, given the reference's tokens before it, is the
    reference's token and the last is <eos>, which is where greedy decoding would give it exactly. A
    hypothesis is the argmax tokens up to the first wrong one (the rest would need decoding)."""
    from grader.sandbox.child.tree import resolve
    from grader.training.library import strip_specials

    collate = resolve(SUBMISSION, "assignment4.data:collate")
    model.eval()
    matched, hypotheses = 0, []
    with torch.no_grad():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            src, tgt_in, tgt_out = collate([(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in chunk],
                                           model.pad_idx)
            predicted = model(src, tgt_in).argmax(-1)
            kept = tgt_out != model.pad_idx
            right = (predicted == tgt_out) | ~kept
            matched += int(right.all(dim=1).sum())
            for row, ok in zip(predicted.tolist(), right.tolist(), strict=True):
                upto = ok.index(False) + 1 if False in ok else len(row)
                hypotheses.append(strip_specials(row[:upto], tgt_vocab))
    return {"exact_match": matched / max(len(pairs), 1), "hypotheses": hypotheses}


KIT = {"linear_sublayer": LinearSublayer, "counting_scheduler": CountingScheduler, "tiny_translator": TinyTranslator,
       "train_date_task": train_date_task}
# the submission's modules a kit target imports as it runs (grader.training.library.fit resolves these):
# the worker imports them first, and puts the global state back after
IMPORTS = {"train_date_task": ("assignment4.data", "assignment4.training", "assignment3.transformer")}
