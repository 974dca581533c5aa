"""Pictures of a training run (matplotlib, imported only when drawing)."""

from collections.abc import Callable
from pathlib import Path


def show_training_plots(console, *, out: Path, history, model, src_tokens, attend: Callable[[], tuple]) -> int:
    """Write the training curve, the cross-attention map of `src_tokens` (`attend()`: its weights and the
    output tokens) and the positional encoding as PNGs in `out`, and say where on `console`; the exit
    status: 0 (matplotlib missing is said, not failed), 1 when drawing failed."""
    from rich.panel import Panel

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        console.print("[yellow]No pictures: pip install matplotlib (or the kit's \\[plots] extra) "
                      "to get the training curve, attention map and positional encoding as PNGs.[/yellow]")
        return 0
    try:
        attn, out_tokens = attend()
        pe = model.src_embed.position.pe[:48].detach().cpu()
        paths = save_training_plots(out, history, attn.detach().cpu(), src_tokens, out_tokens, pe)
    except Exception as exc:
        console.print(Panel(f"[red]{type(exc).__name__}: {exc}", title="could not draw the pictures",
                            border_style="red"))
        return 1
    console.print(Panel("\n".join(str(p) for p in paths), title="pictures written", border_style="green"))
    return 0


def save_training_plots(out: Path, history, attn, attn_src, attn_out, pe) -> list[Path]:
    """The training curve, a cross-attention map and the positional encoding as PNGs in `out`.

    `history` is a grader.training.library.History. Needs matplotlib (raises ImportError)."""
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
    (handles1, labels1), (handles2, labels2) = ax1.get_legend_handles_labels(), ax2.get_legend_handles_labels()
    ax1.legend(handles1 + handles2, labels1 + labels2, loc="upper right")
    ax1.set_title("Training curve")
    fig.tight_layout()
    paths.append(out / "training_curve.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    paths.append(save_attention_map(out / "cross_attention.png", attn, attn_src, attn_out))

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


def save_attention_map(path: Path, weights, src_tokens: list[str], out_tokens: list[str]) -> Path:
    """`weights` (len(out_tokens), len(src_tokens)): row i is output token i's cross-attention over the
    source, drawn at the size the sentence needs (the bundled task's run and `grade translate`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.5 + 0.6 * len(src_tokens), 1.2 + 0.4 * len(out_tokens)))
    im = ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, aspect="auto")
    ax.set_xticks(range(len(src_tokens)), src_tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(out_tokens)), out_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("output (greedy)")
    ax.set_title("Cross-attention, last decoder layer\n(mean over heads)")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
