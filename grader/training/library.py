"""The training library: train a tree's Transformer on the bundled date task and score it.

Torch and the standard library only: it also runs inside the sandbox, where the hidden
end-to-end check calls fit() on the submission (grader.sandbox.child.fixtures). BLEU is
sacreBLEU's (grader.training.bleu), imported only when a score is asked for, never there.

    fit(pkg, task, config, *, seed, options)                   -> (model, History)
    evaluate(pkg, model, pairs, src_vocab, tgt_vocab)          -> {"exact_match", "bleu", ...}
    corpus_bleu(hypotheses, references)                        -> float in [0, 100] (sacreBLEU's)

`pkg` is the package name an assignment tree was imported under with
grader.sandbox.child.tree.import_tree; everything trained or decoded here goes through
that tree's own code (Transformer, Vocab, collate, LabelSmoothingLoss, noam_lr,
train_epoch, greedy_decode).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from grader.sandbox.child.tree import resolve
from grader.training.bleu import corpus_bleu
from grader.training.toytask import BatchOrder, Task, build_vocabs, encode_pairs, iterate_batches


@dataclass(frozen=True)
class TrainConfig:
    """One training run's settings. The defaults are `grade train assignment4`'s: about a
    minute on a 2-core laptop CPU, >= 95% exact match for the reference."""

    steps: int = 800
    batch_size: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    warmup: int = 200
    lr_scale: float = 1.0
    smoothing: float = 0.1
    max_len: int = 64
    norm_first: bool = False

    def __post_init__(self):
        for name in ("steps", "batch_size", "d_model", "n_heads", "n_layers", "d_ff", "warmup", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


# Two threads were the fastest of 1 and 2 for this small model on a 2-core machine.
DEFAULT_THREADS = min(2, os.cpu_count() or 1)


@dataclass
class History:
    """What fit() records: one entry per optimiser step, plus the vocabularies it built."""

    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)     # non-pad tokens (src + tgt) of each batch
    wall_s: float = 0.0                                 # training time, model building excluded
    src_vocab: object = None
    tgt_vocab: object = None

    @property
    def tokens_per_s(self) -> float:
        return sum(self.tokens) / self.wall_s if self.wall_s > 0 else 0.0


@dataclass(frozen=True)
class FitOptions:
    """fit()'s options beside the settings of the run.

    `threads` sets torch.set_num_threads (None: leave it).
    `model`: train this module instead of building the tree's Transformer (the
    benchmark passes a torch.nn.Transformer of the same size); it must have the
    tree's interface (forward(src, tgt_in) -> logits, pad_idx, ...).
    `on_step(step, loss, lr, tokens)` is called after every step (step counts from 1).
    `until(step, model, history)`: training stops after the first step at which it returns True.
    """

    threads: int | None = DEFAULT_THREADS
    model: torch.nn.Module | None = None
    on_step: Callable[[int, float, float, int], object] | None = None
    until: Callable[[int, torch.nn.Module, History], bool] | None = None


def fit(pkg: str, task: Task, config: TrainConfig = TrainConfig(), *, seed: int = 0,
        options: FitOptions | None = None):
    """Train the tree's Transformer on task.train for `config.steps` batches; return (model, History).

    Adam(betas=(0.9, 0.98), eps=1e-9, lr=config.lr_scale) with LambdaLR(lambda s: noam_lr(s + 1,
    config.d_model, config.warmup)), the tree's LabelSmoothingLoss, and one call of the tree's
    train_epoch per batch (so each step's loss is recorded). Batches come from the
    tree's collate in an order fixed by `seed`; torch.manual_seed(seed) fixes the
    initial weights and dropout. `options`: threads, a model of one's own, hooks (FitOptions).
    """
    o = options or FitOptions()
    Vocab = resolve(pkg, "assignment4.data:Vocab")
    collate = resolve(pkg, "assignment4.data:collate")
    LabelSmoothingLoss = resolve(pkg, "assignment4.training:LabelSmoothingLoss")
    noam_lr = resolve(pkg, "assignment4.training:noam_lr")
    train_epoch = resolve(pkg, "assignment4.training:train_epoch")

    if o.threads is not None:
        torch.set_num_threads(o.threads)
    torch.manual_seed(seed)
    src_vocab, tgt_vocab = build_vocabs(task, Vocab)
    pad_idx = Vocab.PAD if hasattr(Vocab, "PAD") else 0
    c = config
    model = o.model if o.model is not None else _transformer(pkg, len(src_vocab), len(tgt_vocab), pad_idx, c)
    loss_fn = LabelSmoothingLoss(len(tgt_vocab), pad_idx, smoothing=c.smoothing)
    # foreach: torch picks the per-tensor loop on the CPU, a Python loop over the parameters at each of
    # a check's (up to) 1000 steps; the same numbers (tests/kit/unit/test_course.py's stored outputs)
    optimizer = torch.optim.Adam(model.parameters(), lr=c.lr_scale, betas=(0.9, 0.98), eps=1e-9, foreach=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, c.d_model, c.warmup))

    history = History(src_vocab=src_vocab, tgt_vocab=tgt_vocab)
    encoded = encode_pairs(task.train, src_vocab, tgt_vocab)
    batches = iterate_batches(encoded, collate, c.batch_size, pad_idx, order=BatchOrder(seed=seed, repeat=True))

    start = time.perf_counter()
    for step in range(1, c.steps + 1):
        src, tgt_in, tgt_out = batch = next(batches)
        lr = optimizer.param_groups[0]["lr"]  # the rate this step is taken with
        loss = train_epoch(model, [batch], optimizer, loss_fn, scheduler)
        n_tokens = int((src != pad_idx).sum() + (tgt_out != pad_idx).sum())
        history.steps.append(step)
        history.losses.append(float(loss))
        history.lrs.append(lr)
        history.tokens.append(n_tokens)
        history.wall_s = time.perf_counter() - start
        if o.on_step is not None:
            o.on_step(step, float(loss), lr, n_tokens)
        if o.until is not None and o.until(step, model, history):
            break
    return model, history


def _transformer(pkg: str, n_src: int, n_tgt: int, pad_idx: int, c: TrainConfig) -> torch.nn.Module:
    """The tree's own Transformer, of the size `c` sets."""
    Transformer = resolve(pkg, "assignment3.transformer:Transformer")
    return Transformer(n_src, n_tgt, d_model=c.d_model, n_heads=c.n_heads, n_layers=c.n_layers, d_ff=c.d_ff,
                       dropout=c.dropout, max_len=c.max_len, pad_idx=pad_idx, norm_first=c.norm_first)


def strip_specials(ids, vocab) -> list[str]:
    """Decoder output ids -> tokens: drop a leading <sos>, stop at <eos>, drop padding."""
    out = []
    for tok in vocab.decode([int(i) for i in ids]):
        if tok == "<eos>":
            break
        if tok not in ("<sos>", "<pad>"):
            out.append(tok)
    return out


@dataclass(frozen=True)
class Decoding:
    """How translate() and evaluate() decode: at most `max_len` ids a sentence (<sos> and <eos>
    counted; evaluate() sets it from the references), `batch_size` sentences at a time, with the
    tree's greedy_decode or `decode`, another function with its signature."""

    max_len: int = 32
    batch_size: int = 256
    decode: Callable | None = None
    bleu: bool = True  # evaluate() scores BLEU (sacreBLEU; the sandbox never does)


def translate(pkg: str, model, sources: list[list[str]], src_vocab, tgt_vocab, *,
              decoding: Decoding = Decoding()) -> list[list[str]]:
    """Greedy translations (lists of tokens) of `sources` (how: `decoding`)."""
    max_len, batch_size = decoding.max_len, decoding.batch_size
    collate = resolve(pkg, "assignment4.data:collate")
    greedy_decode = decoding.decode or resolve(pkg, "assignment4.decoding:greedy_decode")
    Vocab = type(src_vocab)
    sos, eos = getattr(Vocab, "SOS", 1), getattr(Vocab, "EOS", 2)
    results: list[list[str]] = []
    for i in range(0, len(sources), batch_size):
        chunk: list[tuple[list[int], list[int]]] = [(src_vocab.encode(s), []) for s in sources[i:i + batch_size]]
        src, _, _ = collate(chunk, model.pad_idx)
        ys = greedy_decode(model, src, max_len, sos, eos)
        if len(ys) != len(chunk):
            raise ValueError(f"greedy_decode returned {len(ys)} rows for a batch of {len(chunk)} sources")
        results.extend(strip_specials(row, tgt_vocab) for row in ys.tolist())
    return results


def evaluate(pkg: str, model, pairs, src_vocab, tgt_vocab, *, decoding: Decoding = Decoding()) -> dict:
    """Greedy-decode every source of `pairs` (with `decoding`'s batch size and decode) and score it.

    Returns {"exact_match": fraction of outputs equal to the reference, token for token,
    "bleu": sacreBLEU's corpus BLEU in 0..100 (grader.training.bleu), None without `decoding.bleu`,
    "n": len(pairs), "hypotheses": list of token lists}. The sandbox asks for none: sacreBLEU is
    not imported there, and the grader scores the run's weights itself (grader.suite.trained).
    """
    max_len = max(len(t) for _, t in pairs) + 2  # <sos> + the longest reference + <eos>
    hyps = translate(pkg, model, [s for s, _ in pairs], src_vocab, tgt_vocab,
                     decoding=replace(decoding, max_len=max_len))
    refs = [list(t) for _, t in pairs]
    exact = sum(h == r for h, r in zip(hyps, refs, strict=True)) / max(len(pairs), 1)
    return {"exact_match": exact, "bleu": corpus_bleu(hyps, refs) if decoding.bleu else None, "n": len(pairs),
            "hypotheses": hyps}


def cross_attention(pkg: str, model, src_tokens, src_vocab, tgt_vocab, *, max_len: int = 32):
    """(weights (T_out, S) averaged over heads, output tokens) for one sentence, translated to at
    most `max_len` ids (<sos> counted: not more than the model's positional table holds).

    The sentence is translated greedily, then run once more teacher-forced on its own
    output so that the last decoder layer's cross_attn.attention_weights hold the
    attention of every output position over the source. Row i is the query that
    produced output token i (the last row produced <eos>).
    """
    make_pad_mask = resolve(pkg, "assignment2.masks:make_pad_mask")
    make_tgt_mask = resolve(pkg, "assignment2.masks:make_tgt_mask")
    greedy_decode = resolve(pkg, "assignment4.decoding:greedy_decode")
    Vocab = type(src_vocab)
    src = torch.tensor([src_vocab.encode(src_tokens)], dtype=torch.long)
    ys = greedy_decode(model, src, max_len, getattr(Vocab, "SOS", 1), getattr(Vocab, "EOS", 2))  # (1, L)
    out_tokens = tgt_vocab.decode(ys[0, 1:].tolist())
    if "<eos>" in out_tokens:
        out_tokens = out_tokens[:out_tokens.index("<eos>") + 1]
    tgt_in = ys[:, :len(out_tokens)]  # <sos> y1 .. y_{n-1}: position i predicts out_tokens[i]
    with torch.no_grad():
        src_mask = make_pad_mask(src, model.pad_idx)
        memory = model.encode(src, src_mask)
        model.decode(memory, src_mask, tgt_in, make_tgt_mask(tgt_in, model.pad_idx))
    weights = model.decoder.layers[-1].cross_attn.attention_weights  # (1, h, T, S)
    return weights[0].mean(dim=0), out_tokens
