"""The attention map of one translated sentence as a PNG (matplotlib, imported only when drawing).

The bundled task's pictures are grader.render.plots'; this is the one `grade translate
--attention-map` draws, at the size its sentence needs."""

from __future__ import annotations

from pathlib import Path


def save_attention_map(path: Path, weights, src_tokens: list[str], out_tokens: list[str]) -> Path:
    """`weights` (len(out_tokens), len(src_tokens)): row i is output token i's attention over the source."""
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
