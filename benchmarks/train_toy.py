"""Benchmark: the reference Transformer trained on the bundled date task, against torch.nn.Transformer.

    python benchmarks/train_toy.py [--steps N] [--threads N] [--tree DIR]

Trains the tree's (default: the reference solutions') Transformer with the defaults of
`grade train assignment4` (grader.training.library.TrainConfig), prints its wall time, tokens/s and
exact match / BLEU on the test split; then trains a model of the same size built on
torch.nn.Transformer for the same steps, on the same batches, with the same loss,
schedule and training loop (the tree's), and prints the ratio of the two wall times.
"""

import argparse
import math
import sys
import warnings
from pathlib import Path

import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.sandbox.child.tree import import_tree, resolve  # noqa: E402
from grader.training import library  # noqa: E402
from grader.training.toytask import build_vocabs, make_task  # noqa: E402


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with the course's interface: encode, decode, projection, pad_idx, forward.

    Same sizes and the same post-norm layout; embeddings scaled by sqrt(d_model) plus the
    sinusoidal encoding. The masks given to encode/decode (the course's boolean "may attend")
    are rebuilt as PyTorch's key-padding and causal masks. (nn.Transformer adds a final LayerNorm
    to its encoder and decoder stacks; the course's post-norm stacks have none.)
    """

    def __init__(self, src_vocab, tgt_vocab, d_model, n_heads, n_layers, d_ff, dropout, max_len, pad_idx):
        super().__init__()
        self.pad_idx, self.d_model = pad_idx, d_model
        self.src_tok = nn.Embedding(src_vocab, d_model, padding_idx=pad_idx)
        self.tgt_tok = nn.Embedding(tgt_vocab, d_model, padding_idx=pad_idx)
        pos = torch.arange(max_len)[:, None]
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(dropout)
        self.transformer = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout, batch_first=True)
        self.projection = nn.Linear(d_model, tgt_vocab)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def _embed(self, emb, x):
        return self.dropout(emb(x) * math.sqrt(self.d_model) + self.pe[:x.size(1)])

    def encode(self, src, src_mask=None):
        return self.transformer.encoder(self._embed(self.src_tok, src), src_key_padding_mask=src == self.pad_idx)

    def decode(self, memory, src_mask, tgt, tgt_mask=None):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device, dtype=torch.bool)
        memory_pad = None if src_mask is None else ~src_mask.reshape(src_mask.size(0), -1)  # (B, S) True = pad
        return self.transformer.decoder(self._embed(self.tgt_tok, tgt), memory, tgt_mask=causal,
                                        tgt_key_padding_mask=tgt == self.pad_idx,
                                        memory_key_padding_mask=memory_pad)

    def forward(self, src, tgt):
        src_mask = (src != self.pad_idx)[:, None, None, :]  # (B, 1, 1, S), the course's layout
        return self.projection(self.decode(self.encode(src, src_mask), src_mask, tgt))


def run(pkg, task, steps, threads, model=None):
    config = library.TrainConfig(steps=steps)
    model, history = library.fit(pkg, task, config, seed=0, options=library.FitOptions(threads=threads, model=model))
    metrics = library.evaluate(pkg, model, task.test, history.src_vocab, history.tgt_vocab)
    return history, metrics


def main():
    warnings.filterwarnings("ignore", message=".*nested tensors.*")  # nn.Transformer's eval fast path
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=library.TrainConfig.steps)
    p.add_argument("--threads", type=int, default=library.DEFAULT_THREADS)
    p.add_argument("--tree", default=str(ROOT / "solutions"))
    args = p.parse_args()
    import_tree(Path(args.tree), "_bench_tree")
    task = make_task(seed=0)
    cfg = library.TrainConfig()
    print(f"date task: {len(task.train)} train / {len(task.test)} test pairs; {args.steps} steps of "
          f"{cfg.batch_size}, d_model {cfg.d_model}, {cfg.n_heads} heads, {cfg.n_layers} layers, "
          f"d_ff {cfg.d_ff}; {args.threads} thread(s), torch {torch.__version__}")

    ours, ours_m = run("_bench_tree", task, args.steps, args.threads)
    print(f"course Transformer : {ours.wall_s:6.1f} s  {ours.tokens_per_s:9,.0f} tokens/s  "
          f"exact match {100 * ours_m['exact_match']:5.1f}%  BLEU {ours_m['bleu']:5.1f}")

    torch.manual_seed(0)
    src_vocab, tgt_vocab = build_vocabs(task, resolve("_bench_tree", "assignment4.data:Vocab"))
    model = TorchTransformer(len(src_vocab), len(tgt_vocab), cfg.d_model, cfg.n_heads, cfg.n_layers,
                             cfg.d_ff, cfg.dropout, cfg.max_len, 0)
    theirs, theirs_m = run("_bench_tree", task, args.steps, args.threads, model=model)
    print(f"nn.Transformer     : {theirs.wall_s:6.1f} s  {theirs.tokens_per_s:9,.0f} tokens/s  "
          f"exact match {100 * theirs_m['exact_match']:5.1f}%  BLEU {theirs_m['bleu']:5.1f}")
    print(f"ratio (course / nn.Transformer wall time, same steps): {ours.wall_s / theirs.wall_s:.2f}")


if __name__ == "__main__":
    main()
