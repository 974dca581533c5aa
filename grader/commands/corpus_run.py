"""One corpus run of `grade train assignment4 --data`, shown live: prepare, train, checkpoint, score, draw.

train_corpus is the keyword-only function the command calls (grader.commands.train_corpus parses);
the pieces it strings together are grader.translation's.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.commands.live import ctrl_c_stops, progress_bar
from grader.course_table import ConfigError
from grader.translation import checkpoint as ckpt
from grader.translation.data import Data, prepare
from grader.translation.tokenizing import load_tokenizer

STOPPED = 130  # the exit status of a run stopped by Ctrl-C (checkpoint kept), as a shell's


@dataclass(frozen=True)
class Display:
    """Where a run shows itself: a rich console, and whether it draws its pictures at the end."""

    console: Any
    pictures: bool = True


def train_corpus(*, spec: ckpt.RunSpec, out: Path, resumed: ckpt.Checkpoint | None, device,
                 display: Display) -> int:
    """Train `spec`'s run (from `resumed` where given) to spec.config.steps, checkpointing in `out`, then
    score the held-out split; 0, STOPPED after Ctrl-C, 1 when the tree cannot be imported or raises."""
    from rich.panel import Panel

    from grader.sandbox.child.tree import import_tree
    from grader.translation import trainer

    console, tokenizers = display.console, None
    if resumed is not None:
        t = resumed.tokenizers
        tokenizers = (load_tokenizer(t["kind"], t["src"]), load_tokenizer(t["kind"], t["tgt"]))
    data = prepare(spec, tokenizers)
    if resumed is not None and data.digest != resumed.corpus_digest:
        raise ConfigError(f"--resume: {spec.corpus.path} is not the corpus the checkpoint was trained on "
                          "(it changed since): train afresh with another --out")
    pkg = package_name(Path(spec.submission))
    _introduce(console, spec, data, resumed)
    try:
        import_tree(Path(spec.submission), pkg)
        run = trainer.start(pkg, spec, data, device=device, resume=resumed)
        if not _train_live(console, run, data, out):
            console.print(Panel(f"stopped after step {run.step} of {spec.config.steps}; checkpoint kept: "
                                f"{out / ckpt.NAME}\ncontinue with: grade train assignment4 --out {out} --resume",
                                title="stopped (Ctrl-C)", border_style="yellow"))
            return STOPPED
        return _score_and_draw(display, _Finished(pkg, run, data, out))
    except ConfigError:
        raise
    except NotImplementedError as exc:
        console.print(Panel(f"[red]Not implemented yet:[/red] {exc}\nFinish it and run this again.",
                            title="cannot train", border_style="red"))
        return 1
    except Exception as exc:  # a student's tree can fail anywhere: report it, do not crash
        console.print_exception(max_frames=8)
        console.print(Panel(f"[red]{type(exc).__name__}: {exc}", title="training failed", border_style="red"))
        return 1


def _introduce(console, spec: ckpt.RunSpec, data: Data, resumed: ckpt.Checkpoint | None) -> None:
    from rich.panel import Panel

    c, src = spec.config, spec.corpus
    files = f"{src.path} + {src.target}" if src.target else f"{src.path} (columns {src.columns[0]},{src.columns[1]})"
    s, t = data.held_out_text[0]
    console.print(Panel.fit(
        f"[bold]{files}[/bold]\n{data.n_pairs} pairs read: train {len(data.train)}  held out {len(data.held_out)}"
        f"  left out (over {spec.max_tokens} tokens) {data.too_long}\n"
        f"e.g. [cyan]{s}[/cyan] -> [green]{t}[/green]\n"
        f"tokenizer {data.src_tokenizer.kind}   steps {c.steps}   batch {c.batch_size}   seed {spec.seed}   "
        f"d_model {c.d_model}  heads {c.n_heads}  layers {c.n_layers}\n"
        + (f"resuming at step {resumed.step}\n" if resumed is not None else "")
        + f"tree [bold]{spec.submission}[/bold]\n"
        "[dim]runs this tree's code in this process (no sandbox): for your own code; Ctrl-C stops and keeps "
        "a checkpoint[/dim]",
        title="grade train assignment4 --data"))


def _save(run, data: Data, out: Path) -> None:
    from grader.translation import trainer

    ckpt.save(out, trainer.checkpoint(run, data))
    if data.src_tokenizer.kind == "bpe":  # beside the checkpoint too, for other tools (the checkpoint has them)
        ckpt.write_text_atomically(out / "source-tokenizer.json", data.src_tokenizer.to_json())
        ckpt.write_text_atomically(out / "target-tokenizer.json", data.tgt_tokenizer.to_json())


def _train_live(console, run, data: Data, out: Path) -> bool:
    """Train under a live bar; checkpoint every spec.checkpoint_every steps and at the end or on Ctrl-C."""
    from grader.translation.trainer import Hooks, train

    steps = run.spec.config.steps
    if run.step >= steps:
        console.print(f"the checkpoint is at step {run.step} of {steps}: nothing to train (give --steps more)")
        return True
    progress = progress_bar(console)
    recent: list[tuple[float, int]] = []  # (time, tokens) of the last steps: tokens/s as it is now
    with ctrl_c_stops() as stop, progress:
        bar = progress.add_task("train", total=steps, completed=run.step, loss=float("nan"), lr=0.0, tps=0.0)

        def on_step(step, loss, lr, tokens):
            recent.append((time.perf_counter(), tokens))
            del recent[:-50]
            span = recent[-1][0] - recent[0][0]
            tps = sum(n for _, n in recent[1:]) / span if span > 0 else 0.0
            progress.update(bar, completed=step, loss=loss, lr=lr, tps=tps)

        finished = train(run, steps, Hooks(on_step=on_step, stop=lambda step: stop.requested,
                                           on_checkpoint=lambda step: _save(run, data, out)))
    _save(run, data, out)
    return finished


@dataclass(frozen=True)
class _Finished:
    pkg: str
    run: Any
    data: Data
    out: Path


def _score_and_draw(display: Display, done: _Finished) -> int:
    from rich.table import Table

    from grader.translation.translating import Translator, score_held_out

    console, run, data = display.console, done.run, done.data
    translator = Translator(done.pkg, run.model, run.vocabs, (data.src_tokenizer, data.tgt_tokenizer),
                            run.spec.max_tokens + 2)
    t0 = time.perf_counter()
    scores, hyps = score_held_out(translator, data.held_out_text)
    table = Table(title=f"Held-out split, {scores.n} pairs (greedy decoding, sacreBLEU)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("BLEU", f"{scores.bleu:.1f}")
    table.add_row("chrF", f"{scores.chrf:.1f}")
    losses = run.history.losses[-50:]
    table.add_row("final loss (mean of last 50 steps)", f"{sum(losses) / len(losses):.3f}")
    table.add_row("training time (this session)", f"{run.history.wall_s:.1f} s")
    table.add_row("decoding time (held out)", f"{time.perf_counter() - t0:.1f} s")
    console.print(table)
    console.print(f"[dim]{scores.bleu_signature}\n{scores.chrf_signature}[/dim]")
    samples = [[s, t, h] for (s, t), h in list(zip(data.held_out_text, hyps, strict=True))[:8]]
    shown = Table(title="Sample translations (held out)")
    for name, style in (("source", "cyan"), ("reference", "green"), ("model", None)):
        shown.add_column(name, style=style)
    for row in samples:
        shown.add_row(*row)
    console.print(shown)
    console.print(f"scores: {write_scores(done.out, scores, samples)}   checkpoint: {done.out / ckpt.NAME}")
    return _draw(console, done) if display.pictures else 0


def _draw(console, done: _Finished) -> int:
    """The training curve and the attention map of the first held-out sentence (when matplotlib is there)."""
    from grader.render.plots import show_training_plots
    from grader.training.library import cross_attention

    model, src_tokens = done.run.model.cpu(), done.data.held_out[0][0]
    return show_training_plots(console, out=done.out, history=done.run.history, model=model, src_tokens=src_tokens,
                               attend=lambda: cross_attention(done.pkg, model, src_tokens, *done.run.vocabs,
                                                              max_len=done.run.spec.max_tokens + 2))


def package_name(tree: Path, prefix: str = "_grade_train_") -> str:
    """The package a tree imports as here: one per tree, the same in every run."""
    return prefix + hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:12]


def write_scores(out: Path, scores, samples: list[list[str]]) -> Path:
    """OUT/scores.json: sacreBLEU's scores with their signatures and a few held-out translations."""
    path = out / "scores.json"
    ckpt.write_text_atomically(path, json.dumps({**scores.to_json(), "samples": samples,
                                                 "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2) + "\n")
    return path
