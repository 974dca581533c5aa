"""`grade train assignment4`: train a tree's Transformer on the bundled date task.

Library part (torch and the standard library only, safe in a sandboxed child
process that has nothing but the tree and this package):

    fit(pkg, task, *, steps, seed, ...)                        -> (model, History)
    evaluate(pkg, model, pairs, src_vocab, tgt_vocab)          -> {"exact_match", "bleu", ...}
    corpus_bleu(hypotheses, references)                        -> float in [0, 100]

Front end (imports rich, and matplotlib when present, lazily):

    run(submission, out, *, steps=None, seed=0, console=None)  -> exit code

`pkg` is the package name an assignment tree was imported under with
grader.tree.import_tree; everything trained or decoded here goes through that
tree's own code (Transformer, Vocab, collate, LabelSmoothingLoss, noam_lr,
train_epoch, greedy_decode).

Trust: `grade train` imports and runs the given tree's code in its own process,
without the grader's sandbox (it is a student's command, run on the student's own
code). Grading never does that: the hidden end-to-end check calls fit() inside the
sandboxed worker (grader.worker's `train_date_task`).
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .toytask import Task, build_vocabs, encode_pairs, iterate_batches, make_task
from .tree import import_tree, resolve

# The default budget: about a minute on a 2-core laptop CPU, >= 95% exact match for the reference.
# Two threads were the fastest of 1 and 2 for this small model on a 2-core machine.
DEFAULTS = dict(steps=800, batch_size=64, d_model=64, n_heads=4, n_layers=2, d_ff=256,
                dropout=0.1, warmup=200, lr_scale=1.0, smoothing=0.1, max_len=64,
                threads=min(2, os.cpu_count() or 1))


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
    config: dict = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return sum(self.tokens) / self.wall_s if self.wall_s > 0 else 0.0


def fit(pkg: str, task: Task, *, steps: int = DEFAULTS["steps"], seed: int = 0,
        d_model: int = DEFAULTS["d_model"], n_heads: int = DEFAULTS["n_heads"],
        n_layers: int = DEFAULTS["n_layers"], d_ff: int = DEFAULTS["d_ff"],
        dropout: float = DEFAULTS["dropout"], batch_size: int = DEFAULTS["batch_size"],
        warmup: int = DEFAULTS["warmup"], lr_scale: float = DEFAULTS["lr_scale"],
        smoothing: float = DEFAULTS["smoothing"], max_len: int = DEFAULTS["max_len"],
        norm_first: bool = False, threads: int | None = DEFAULTS["threads"],
        model: torch.nn.Module | None = None, on_step=None):
    """Train the tree's Transformer on task.train for `steps` batches; return (model, History).

    Adam(betas=(0.9, 0.98), eps=1e-9, lr=lr_scale) with LambdaLR(lambda s: noam_lr(s + 1,
    d_model, warmup)), the tree's LabelSmoothingLoss, and one call of the tree's
    train_epoch per batch (so each step's loss is recorded). Batches come from the
    tree's collate in an order fixed by `seed`; torch.manual_seed(seed) fixes the
    initial weights and dropout. `threads` sets torch.set_num_threads (None: leave it).

    `model`: train this module instead of building the tree's Transformer (the
    benchmark passes a torch.nn.Transformer of the same size); it must have the
    tree's interface (forward(src, tgt_in) -> logits, pad_idx, ...).
    `on_step(step, loss, lr, tokens)` is called after every step (step counts from 1).
    """
    Vocab = resolve(pkg, "assignment4.data:Vocab")
    collate = resolve(pkg, "assignment4.data:collate")
    LabelSmoothingLoss = resolve(pkg, "assignment4.training:LabelSmoothingLoss")
    noam_lr = resolve(pkg, "assignment4.training:noam_lr")
    train_epoch = resolve(pkg, "assignment4.training:train_epoch")

    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    src_vocab, tgt_vocab = build_vocabs(task, Vocab)
    pad_idx = Vocab.PAD if hasattr(Vocab, "PAD") else 0
    if model is None:
        Transformer = resolve(pkg, "assignment3.transformer:Transformer")
        model = Transformer(len(src_vocab), len(tgt_vocab), d_model=d_model, n_heads=n_heads,
                            n_layers=n_layers, d_ff=d_ff, dropout=dropout, max_len=max_len,
                            pad_idx=pad_idx, norm_first=norm_first)
    loss_fn = LabelSmoothingLoss(len(tgt_vocab), pad_idx, smoothing=smoothing)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr_scale, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_lr(s + 1, d_model, warmup))

    history = History(src_vocab=src_vocab, tgt_vocab=tgt_vocab, config=dict(
        steps=steps, seed=seed, d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff,
        dropout=dropout, batch_size=batch_size, warmup=warmup, lr_scale=lr_scale,
        smoothing=smoothing, max_len=max_len, norm_first=norm_first, threads=threads))
    encoded = encode_pairs(task.train, src_vocab, tgt_vocab)
    batches = iterate_batches(encoded, collate, batch_size, pad_idx, seed=seed, repeat=True)

    start = time.perf_counter()
    for step in range(1, steps + 1):
        src, tgt_in, tgt_out = batch = next(batches)
        lr = optimizer.param_groups[0]["lr"]  # the rate this step is taken with
        loss = train_epoch(model, [batch], optimizer, loss_fn, scheduler)
        n_tokens = int((src != pad_idx).sum() + (tgt_out != pad_idx).sum())
        history.steps.append(step)
        history.losses.append(float(loss))
        history.lrs.append(lr)
        history.tokens.append(n_tokens)
        history.wall_s = time.perf_counter() - start
        if on_step is not None:
            on_step(step, float(loss), lr, n_tokens)
    return model, history


def strip_specials(ids, vocab) -> list[str]:
    """Decoder output ids -> tokens: drop a leading <sos>, stop at <eos>, drop padding."""
    out = []
    for tok in vocab.decode([int(i) for i in ids]):
        if tok == "<eos>":
            break
        if tok not in ("<sos>", "<pad>"):
            out.append(tok)
    return out


def translate(pkg: str, model, sources: list[list[str]], src_vocab, tgt_vocab, *,
              max_len: int = 32, batch_size: int = 256) -> list[list[str]]:
    """Greedy translations (lists of tokens) of `sources` with the tree's greedy_decode."""
    collate = resolve(pkg, "assignment4.data:collate")
    greedy_decode = resolve(pkg, "assignment4.decoding:greedy_decode")
    Vocab = type(src_vocab)
    sos, eos = getattr(Vocab, "SOS", 1), getattr(Vocab, "EOS", 2)
    results = []
    for i in range(0, len(sources), batch_size):
        chunk = [(src_vocab.encode(s), []) for s in sources[i:i + batch_size]]
        src, _, _ = collate(chunk, model.pad_idx)
        ys = greedy_decode(model, src, max_len, sos, eos)
        results.extend(strip_specials(row, tgt_vocab) for row in ys.tolist())
    return results


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hypotheses: list[list[str]], references: list[list[str]], max_n: int = 4) -> float:
    """Corpus BLEU-4 (Papineni et al., 2002), one reference per sentence, 0..100.

    Clipped n-gram counts are summed over the corpus for n = 1..4; BLEU is the
    geometric mean of the four precisions times the brevity penalty
    exp(1 - r / c) when the hypotheses are shorter in total (c) than the references (r).
    No smoothing: a corpus with no matching 4-gram scores 0.
    """
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_n + 1):
            h, r = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if hyp_len == 0 or min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100.0 * brevity * math.exp(log_precision)


def evaluate(pkg: str, model, pairs, src_vocab, tgt_vocab, *, batch_size: int = 256) -> dict:
    """Greedy-decode every source of `pairs` with the tree's greedy_decode and score it.

    Returns {"exact_match": fraction of outputs equal to the reference, token for token,
    "bleu": corpus BLEU-4 in 0..100, "n": len(pairs), "hypotheses": list of token lists}.
    """
    max_len = max(len(t) for _, t in pairs) + 2  # <sos> + the longest reference + <eos>
    hyps = translate(pkg, model, [s for s, _ in pairs], src_vocab, tgt_vocab,
                     max_len=max_len, batch_size=batch_size)
    refs = [list(t) for _, t in pairs]
    exact = sum(h == r for h, r in zip(hyps, refs)) / max(len(pairs), 1)
    return {"exact_match": exact, "bleu": corpus_bleu(hyps, refs), "n": len(pairs), "hypotheses": hyps}


def cross_attention(pkg: str, model, src_tokens, src_vocab, tgt_vocab):
    """(weights (T_out, S) averaged over heads, output tokens) for one sentence.

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
    ys = greedy_decode(model, src, 32, getattr(Vocab, "SOS", 1), getattr(Vocab, "EOS", 2))  # (1, L)
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


# ---- the front end ----------------------------------------------------------------

def _save_plots(out: Path, history: History, attn, attn_src, attn_out, pe) -> list[Path]:
    """Write the three PNGs; return their paths. Needs matplotlib (raises ImportError)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []

    fig, ax1 = plt.subplots(figsize=(7, 4))
    ax1.plot(history.steps, history.losses, lw=0.6, alpha=0.4, color="tab:blue", label="batch loss")
    k = max(1, len(history.losses) // 50)  # a running mean shows the trend through the noise
    smooth = [sum(history.losses[max(0, i - k + 1):i + 1]) / len(history.losses[max(0, i - k + 1):i + 1])
              for i in range(len(history.losses))]
    ax1.plot(history.steps, smooth, lw=1.8, color="tab:blue", label=f"running mean ({k} steps)")
    ax1.set_xlabel("step")
    ax1.set_ylabel("label-smoothed loss")
    ax1.set_yscale("log")
    ax2 = ax1.twinx()
    ax2.plot(history.steps, history.lrs, color="tab:orange", lw=1.2, label="learning rate")
    ax2.set_ylabel("learning rate (noam)", color="tab:orange")
    lines = ax1.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax1.legend(lines, [l.get_label() for l in lines], loc="upper right")
    ax1.set_title("Training curve")
    fig.tight_layout()
    paths.append(out / "training_curve.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(attn_src), 1.0 + 0.45 * len(attn_out)))
    im = ax.imshow(attn.numpy(), cmap="viridis", vmin=0.0, aspect="auto")
    ax.set_xticks(range(len(attn_src)), attn_src, rotation=45, ha="right")
    ax.set_yticks(range(len(attn_out)), attn_out)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    ax.set_title("Cross-attention, last decoder layer\n(mean over heads)")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    paths.append(out / "cross_attention.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    im = ax.imshow(pe.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    ax.set_title("Sinusoidal positional encoding (pe buffer)")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    paths.append(out / "positional_encoding.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def run(submission: Path, out: Path, *, steps: int | None = None, seed: int = 0, console=None) -> int:
    """Train `submission`'s Transformer on the date task, report test metrics, draw pictures.

    `submission` holds assignment1..assignment4 (the kit's assignments/ or solutions/);
    PNGs go to `out`. Returns 0, or 1 when the tree cannot be imported or raises.
    The tree's code runs in this process, not in the grader's sandbox: run it on code you trust.
    """
    from rich.console import Console
    from rich.panel import Panel
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    from rich.table import Table

    console = console or Console()
    submission, out = Path(submission), Path(out)
    steps = steps or DEFAULTS["steps"]
    pkg = "_grade_train_" + hashlib.sha1(str(submission.resolve()).encode()).hexdigest()[:12]
    task = make_task(seed=seed)
    config = {k: v for k, v in DEFAULTS.items() if k != "steps"}
    console.print(Panel.fit(
        f"[bold]Dates -> ISO[/bold]   train {len(task.train)}  valid {len(task.valid)}  test {len(task.test)}\n"
        f"e.g. [cyan]{' '.join(task.train[0][0])}[/cyan] -> [green]{' '.join(task.train[0][1])}[/green]\n"
        f"tree [bold]{submission}[/bold]   steps {steps}   seed {seed}   "
        f"d_model {config['d_model']}  heads {config['n_heads']}  layers {config['n_layers']}\n"
        f"[dim]runs this tree's code in this process (no sandbox): for your own code[/dim]",
        title="grade train assignment4"))

    try:
        import_tree(submission, pkg)
        progress = Progress(
            TextColumn("[bold blue]training"), BarColumn(), MofNCompleteColumn(),
            TextColumn("loss [bold]{task.fields[loss]:.3f}"),
            TextColumn("lr {task.fields[lr]:.2e}"),
            TextColumn("{task.fields[tps]:,.0f} tok/s"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console)
        t0 = time.perf_counter()
        seen = [0]
        with progress:
            bar = progress.add_task("train", total=steps, loss=float("nan"), lr=0.0, tps=0.0)

            def on_step(step, loss, lr, tokens):
                seen[0] += tokens
                progress.update(bar, completed=step, loss=loss, lr=lr,
                                tps=seen[0] / max(time.perf_counter() - t0, 1e-9))

            model, history = fit(pkg, task, steps=steps, seed=seed, on_step=on_step, **config)
        src_vocab, tgt_vocab = history.src_vocab, history.tgt_vocab
        t1 = time.perf_counter()
        metrics = evaluate(pkg, model, task.test, src_vocab, tgt_vocab)
        eval_s = time.perf_counter() - t1
    except NotImplementedError as exc:
        console.print(Panel(f"[red]Not implemented yet:[/red] {exc}\nFinish it and run this again.",
                            title="cannot train", border_style="red"))
        return 1
    except Exception as exc:  # a student's tree can fail anywhere: report it, do not crash
        console.print_exception(max_frames=8)
        console.print(Panel(f"[red]{type(exc).__name__}: {exc}", title="training failed", border_style="red"))
        return 1

    table = Table(title="Test split (greedy decoding)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("exact match", f"{100 * metrics['exact_match']:.1f}%  ({round(metrics['exact_match'] * metrics['n'])}/{metrics['n']})")
    table.add_row("BLEU-4", f"{metrics['bleu']:.1f}")
    table.add_row("final loss (mean of last 50 steps)", f"{sum(history.losses[-50:]) / len(history.losses[-50:]):.3f}")
    table.add_row("training time", f"{history.wall_s:.1f} s")
    table.add_row("tokens / s", f"{history.tokens_per_s:,.0f}")
    table.add_row("decoding time (test)", f"{eval_s:.1f} s")
    console.print(table)

    samples = Table(title="Sample translations (test split)", show_lines=False)
    samples.add_column("source", style="cyan")
    samples.add_column("reference", style="green")
    samples.add_column("model")
    samples.add_column("", justify="center")
    for (src, ref), hyp in list(zip(task.test, metrics["hypotheses"]))[:8]:
        ok = hyp == list(ref)
        samples.add_row(" ".join(src), " ".join(ref), " ".join(hyp) or "(empty)",
                        "[green]✓[/green]" if ok else "[red]✗[/red]")
    console.print(samples)

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        console.print("[yellow]No pictures: pip install matplotlib (or the kit's [plots] extra) "
                      "to get the training curve, attention map and positional encoding as PNGs.[/yellow]")
        return 0
    try:
        sample_src = task.test[0][0]
        attn, out_tokens = cross_attention(pkg, model, sample_src, src_vocab, tgt_vocab)
        pe = model.src_embed.position.pe[:48].detach().cpu()
        paths = _save_plots(out, history, attn.detach().cpu(), sample_src, out_tokens, pe)
    except Exception as exc:
        console.print(Panel(f"[red]{type(exc).__name__}: {exc}", title="could not draw the pictures",
                            border_style="red"))
        return 1
    console.print(Panel("\n".join(str(p) for p in paths), title="pictures written", border_style="green"))
    return 0
