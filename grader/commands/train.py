"""`grade train assignment4`: train a tree's Transformer on the bundled date task, live (with --data, on a
corpus of the user's: grader.commands.train_corpus).

The tree's code runs in this process, without the grader's sandbox: it is a student's
command, run on the student's own code. Grading never does that (the hidden end-to-end
check trains inside the sandbox).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.commands import positive_int
from grader.course import find_course
from grader.course_table import ConfigError
from grader.usage import UsageParser

if TYPE_CHECKING:
    from grader.training.library import TrainConfig


def main(argv: list[str]) -> int:
    from grader.commands.train_corpus import add_corpus_options, corpus_main
    from grader.course import load as load_course
    from grader.training.library import TrainConfig

    p = UsageParser(prog="grade train", description="Train your Transformer on the bundled translation task, or "
                    "on a parallel corpus of your own (--data).")
    p.add_argument("assignment", choices=("assignment4",), help="the assignment whose Transformer trains")
    p.add_argument("--submission", metavar="DIR", help="the tree to train (default: the course's assignments/)")
    p.add_argument("--out", metavar="DIR", default="training-output",
                   help="where the pictures (PNG) go, and with --data the checkpoint (default: %(default)s)")
    p.add_argument("--steps", type=positive_int, default=None,
                   help=f"optimiser steps (default: {TrainConfig.steps}; with --data 4000, or the checkpoint's "
                        "with --resume)")
    p.add_argument("--seed", type=int, default=None, help="the random seed of training (default: 0)")
    p.add_argument("--course", metavar="PATH", help="course.toml (default: found from the current folder)")
    add_corpus_options(p)
    args = p.parse_args(argv)
    if args.data or args.resume:
        return corpus_main(args)
    corpus_only = [flag for flag, value in vars(args).items() if flag.startswith("corpus_") and value is not None]
    if corpus_only:
        raise ConfigError(f"--{corpus_only[0].removeprefix('corpus_').replace('_', '-')}: only with --data or "
                          "--resume (a corpus of your own)")
    course = load_course(find_course(args.course))
    submission = Path(args.submission) if args.submission else course.assignments_dir
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    return train_tree(submission=submission, out=Path(args.out),
                      config=TrainConfig(steps=args.steps or TrainConfig.steps), seed=args.seed or 0)


def train_tree(*, submission: Path, out: Path, config: TrainConfig, seed: int = 0, console=None) -> int:
    """Train `submission`'s Transformer on the date task, report test metrics, draw pictures.

    `submission` holds assignment1..assignment4 (the kit's assignments/ or solutions/);
    PNGs go to `out`. Returns 0, or 1 when the tree cannot be imported or raises.
    The tree's code runs in this process, not in the grader's sandbox: run it on code you trust.
    """
    from rich.console import Console

    from grader.training.toytask import make_task

    console = console or Console()
    submission, out = Path(submission), Path(out)
    pkg = "_grade_train_" + hashlib.sha1(str(submission.resolve()).encode()).hexdigest()[:12]
    task = make_task(seed=seed)
    _introduce(console, task, submission, config, seed)
    trained = _train(console, submission, pkg, task, config, seed)
    if trained is None:
        return 1
    _show_results(console, task, trained)
    return _draw_pictures(console, pkg, task, trained, out)


@dataclass(frozen=True)
class _Trained:
    """What a finished training run hands on to the tables and the pictures."""

    model: Any
    history: Any
    metrics: dict
    eval_s: float


def _introduce(console, task, submission: Path, config: TrainConfig, seed: int) -> None:
    from rich.panel import Panel

    console.print(Panel.fit(
        f"[bold]Dates -> ISO[/bold]   train {len(task.train)}  valid {len(task.valid)}  test {len(task.test)}\n"
        f"e.g. [cyan]{' '.join(task.train[0][0])}[/cyan] -> [green]{' '.join(task.train[0][1])}[/green]\n"
        f"tree [bold]{submission}[/bold]   steps {config.steps}   seed {seed}   "
        f"d_model {config.d_model}  heads {config.n_heads}  layers {config.n_layers}\n"
        f"[dim]runs this tree's code in this process (no sandbox): for your own code[/dim]",
        title="grade train assignment4"))


def _train(console, submission: Path, pkg: str, task, config: TrainConfig, seed: int) -> _Trained | None:
    """Import the tree, train it under a live bar, decode the test split; None (said why) if the tree fails."""
    from rich.panel import Panel

    from grader.commands.live import progress_bar
    from grader.sandbox.child.tree import import_tree
    from grader.training.library import FitOptions, evaluate, fit

    try:
        import_tree(submission, pkg)
        progress = progress_bar(console)
        t0 = time.perf_counter()
        seen = [0]
        with progress:
            bar = progress.add_task("train", total=config.steps, loss=float("nan"), lr=0.0, tps=0.0)

            def on_step(step, loss, lr, tokens):
                seen[0] += tokens
                progress.update(bar, completed=step, loss=loss, lr=lr,
                                tps=seen[0] / max(time.perf_counter() - t0, 1e-9))

            model, history = fit(pkg, task, config, seed=seed, options=FitOptions(on_step=on_step))
        t1 = time.perf_counter()
        metrics = evaluate(pkg, model, task.test, history.src_vocab, history.tgt_vocab)
        return _Trained(model, history, metrics, time.perf_counter() - t1)
    except NotImplementedError as exc:
        console.print(Panel(f"[red]Not implemented yet:[/red] {exc}\nFinish it and run this again.",
                            title="cannot train", border_style="red"))
        return None
    except Exception as exc:  # a student's tree can fail anywhere: report it, do not crash
        console.print_exception(max_frames=8)
        console.print(Panel(f"[red]{type(exc).__name__}: {exc}", title="training failed", border_style="red"))
        return None


def _show_results(console, task, trained: _Trained) -> None:
    from rich.table import Table

    metrics, history = trained.metrics, trained.history
    table = Table(title="Test split (greedy decoding)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    exact, n = metrics["exact_match"], metrics["n"]
    table.add_row("exact match", f"{100 * exact:.1f}%  ({round(exact * n)}/{n})")
    table.add_row("BLEU-4", f"{metrics['bleu']:.1f}")
    table.add_row("final loss (mean of last 50 steps)", f"{sum(history.losses[-50:]) / len(history.losses[-50:]):.3f}")
    table.add_row("training time", f"{history.wall_s:.1f} s")
    table.add_row("tokens / s", f"{history.tokens_per_s:,.0f}")
    table.add_row("decoding time (test)", f"{trained.eval_s:.1f} s")
    console.print(table)

    samples = Table(title="Sample translations (test split)", show_lines=False)
    samples.add_column("source", style="cyan")
    samples.add_column("reference", style="green")
    samples.add_column("model")
    samples.add_column("", justify="center")
    for (src, ref), hyp in list(zip(task.test, metrics["hypotheses"], strict=True))[:8]:
        ok = hyp == list(ref)
        samples.add_row(" ".join(src), " ".join(ref), " ".join(hyp) or "(empty)",
                        "[green]✓[/green]" if ok else "[red]✗[/red]")
    console.print(samples)


def _draw_pictures(console, pkg: str, task, trained: _Trained, out: Path) -> int:
    """The training curve, an attention map and the positional encoding as PNGs (when matplotlib is there)."""
    from grader.render.plots import show_training_plots
    from grader.training.library import cross_attention

    model, history, src_tokens = trained.model, trained.history, task.test[0][0]
    return show_training_plots(console, out=out, history=history, model=model, src_tokens=src_tokens,
                               attend=lambda: cross_attention(pkg, model, src_tokens, history.src_vocab,
                                                              history.tgt_vocab))
