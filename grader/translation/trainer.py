"""The training loop of a corpus run, on the student's own stack, that stops and resumes bit for bit.

The submission's Vocab numbers the tokens, its Transformer is the model, its LabelSmoothingLoss,
noam_lr and train_epoch train it (one call of train_epoch a step, as the bundled task's
grader.training.library.fit does, with the same optimiser and schedule). The batch of each step is
a function of the seed and the step (data.BatchOrder); the dropout draws come from torch's
generator, whose state a checkpoint keeps; so a run resumed from the checkpoint of step k takes the
same steps k+1.. as the run that never stopped, and ends on the same weights, bit for bit (on the
same machine, torch and thread count).

On a GPU (`device` "cuda") each step runs under bfloat16 autocast: mixed precision without a loss
scaler, which train_epoch (the student's, stepping the optimiser itself) could not take.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from grader.course_table import ConfigError
from grader.sandbox.child.tree import resolve
from grader.training.library import DEFAULT_THREADS, History
from grader.translation.checkpoint import Checkpoint, RunSpec, rng_state, set_rng_state
from grader.translation.data import BatchOrder, Data


@dataclass(frozen=True)
class Hooks:
    """`on_step(step, loss, lr, tokens)` after each step; `stop(step)` after each step: True ends the
    run there, as Ctrl-C does (the caller checkpoints); `on_checkpoint(step)`: a checkpoint is due."""

    on_step: Callable[[int, float, float, int], object] | None = None
    stop: Callable[[int], bool] | None = None
    on_checkpoint: Callable[[int], object] | None = None


@dataclass
class Run:
    """A run in progress: the student's model and the training state around it."""

    pkg: str
    spec: RunSpec
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    vocabs: tuple            # (src, tgt): the student's Vocab objects
    encoded: list[tuple[list[int], list[int]]]
    device: torch.device
    step: int = 0            # steps taken
    history: History = field(default_factory=History)


def check_device(device: str) -> torch.device:
    """`device` ("cpu", "cuda", "cuda:1") if this machine has it; ConfigError otherwise."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"--device: {device!r} is not a device (cpu, cuda or cuda:N)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: no CUDA GPU is visible here (torch.cuda.is_available() is False); "
                          "train with --device cpu")
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError(f"--device: {device!r}: cpu or cuda")
    return dev


def itos(vocab) -> list[str]:
    """id -> token of a Vocab, read through its contract (decode), whatever it keeps inside."""
    return [str(t) for t in vocab.decode(list(range(len(vocab))))]


def start(pkg: str, spec: RunSpec, data: Data, *, device: torch.device, resume: Checkpoint | None = None) -> Run:
    """Build the student's stack for `data` (seeded by spec.seed), or take it up where `resume` left it."""
    Vocab = resolve(pkg, "assignment4.data:Vocab")
    torch.set_num_threads(DEFAULT_THREADS)
    torch.manual_seed(spec.seed)
    src_vocab, tgt_vocab = Vocab([s for s, _ in data.train]), Vocab([t for _, t in data.train])
    if resume is not None and (itos(src_vocab), itos(tgt_vocab)) != (resume.vocabs["src"], resume.vocabs["tgt"]):
        raise ConfigError("--resume: your Vocab numbers the corpus otherwise than when the checkpoint was "
                          "written (assignment4/data.py changed?): train afresh without --resume")
    pad = getattr(Vocab, "PAD", 0)
    c = spec.config
    Transformer = resolve(pkg, "assignment3.transformer:Transformer")
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=c.d_model, n_heads=c.n_heads, n_layers=c.n_layers,
                        d_ff=c.d_ff, dropout=c.dropout, max_len=spec.max_tokens + 2, pad_idx=pad,
                        norm_first=c.norm_first).to(device)
    noam_lr = resolve(pkg, "assignment4.training:noam_lr")
    optimizer = torch.optim.Adam(model.parameters(), lr=c.lr_scale, betas=(0.9, 0.98), eps=1e-9, foreach=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, c.d_model, c.warmup))
    encoded = [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in data.train]
    run = Run(pkg, spec, model, optimizer, scheduler, (src_vocab, tgt_vocab), encoded, device,
              history=History(src_vocab=src_vocab, tgt_vocab=tgt_vocab))
    if resume is not None:
        model.load_state_dict(resume.model)
        optimizer.load_state_dict(resume.optimizer)
        scheduler.load_state_dict(resume.scheduler)
        set_rng_state(resume.rng)
        run.step = resume.step
        h = resume.history
        run.history.steps, run.history.losses = list(range(1, run.step + 1)), list(h["losses"])
        run.history.lrs, run.history.tokens = list(h["lrs"]), list(h["tokens"])
    return run


def train(run: Run, steps: int, hooks: Hooks = Hooks()) -> bool:
    """Take steps run.step+1 .. `steps`; True when it went to the end, False when `hooks.stop` ended it."""
    collate = resolve(run.pkg, "assignment4.data:collate")
    train_epoch = resolve(run.pkg, "assignment4.training:train_epoch")
    LabelSmoothingLoss = resolve(run.pkg, "assignment4.training:LabelSmoothingLoss")
    pad = run.model.pad_idx
    loss_fn = LabelSmoothingLoss(len(run.vocabs[1]), pad, smoothing=run.spec.config.smoothing)
    order = BatchOrder([len(s) + len(t) for s, t in run.encoded], run.spec.config.batch_size, run.spec.seed)
    cuda = run.device.type == "cuda"
    started, wall0 = time.perf_counter(), run.history.wall_s
    while run.step < steps:
        batch = tuple(x.to(run.device) for x in collate([run.encoded[j] for j in order.batch(run.step)], pad))
        lr = run.optimizer.param_groups[0]["lr"]  # the rate this step is taken with
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
            loss = float(train_epoch(run.model, [batch], run.optimizer, loss_fn, run.scheduler))
        run.step += 1
        tokens = int((batch[0] != pad).sum() + (batch[2] != pad).sum())
        h = run.history
        h.steps.append(run.step)
        h.losses.append(loss)
        h.lrs.append(lr)
        h.tokens.append(tokens)
        h.wall_s = wall0 + time.perf_counter() - started
        if hooks.on_step is not None:
            hooks.on_step(run.step, loss, lr, tokens)
        if hooks.on_checkpoint is not None and run.step % run.spec.checkpoint_every == 0 and run.step < steps:
            hooks.on_checkpoint(run.step)
        if hooks.stop is not None and hooks.stop(run.step) and run.step < steps:
            return False
    return True


def checkpoint(run: Run, data: Data) -> Checkpoint:
    """The run's state now, as checkpoint.save writes it."""
    h = run.history
    return Checkpoint(
        spec=run.spec, step=run.step, model=run.model.state_dict(), optimizer=run.optimizer.state_dict(),
        scheduler=run.scheduler.state_dict(), vocabs={"src": itos(run.vocabs[0]), "tgt": itos(run.vocabs[1])},
        tokenizers={"kind": data.src_tokenizer.kind, "src": data.src_tokenizer.to_json(),
                    "tgt": data.tgt_tokenizer.to_json()},
        rng=rng_state(), history={"losses": list(h.losses), "lrs": list(h.lrs), "tokens": list(h.tokens)},
        corpus_digest=data.digest)
