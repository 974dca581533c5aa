"""Benchmark: the reference Transformer trained on a generated corpus, as `grade train assignment4 --data` does.

    python benchmarks/train_corpus.py [--pairs N] [--steps N] [--d-model N] [--tokenizer word|bpe] [--tree DIR]

Writes N pairs of the made-up language pair of the kit's tests (tests/kit/madeup.py: its own lexicon
and word order, generated from a seed) as a Tatoeba-style tab-separated file, trains the tree's stack
(default: the reference solutions) on it with the corpus route's loop (grader.translation), and prints
sacreBLEU's BLEU and chrF on the held-out split with their signatures, the training time and
tokens/s, and the decoding time.
"""

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.commands.train_corpus import CORPUS_CONFIG  # noqa: E402
from grader.sandbox.child.tree import import_tree  # noqa: E402
from grader.translation import trainer  # noqa: E402
from grader.translation.checkpoint import RunSpec  # noqa: E402
from grader.translation.corpus import CorpusSource  # noqa: E402
from grader.translation.data import prepare  # noqa: E402
from grader.translation.translating import Translator, score_held_out  # noqa: E402
from tests.kit import madeup  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=10_000)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--tokenizer", default="word", choices=("word", "bpe"))
    p.add_argument("--tree", default=str(ROOT / "solutions"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = madeup.write_tsv(Path(tmp) / "pairs.tsv", args.pairs, seed=0)
        config = replace(CORPUS_CONFIG, steps=args.steps, d_model=args.d_model, d_ff=4 * args.d_model)
        spec = RunSpec(submission=args.tree, corpus=CorpusSource(path), config=config, tokenizer=args.tokenizer,
                       bpe_vocab=500)
        data = prepare(spec)
    import_tree(Path(args.tree), "_bench_corpus")
    print(f"made-up pairs: {data.n_pairs} read, {len(data.train)} train / {len(data.held_out)} held out; "
          f"{args.steps} steps of {config.batch_size}, d_model {config.d_model}, {config.n_heads} heads, "
          f"{config.n_layers} layers, tokenizer {args.tokenizer}; {torch.get_num_threads()} thread(s), "
          f"torch {torch.__version__}", flush=True)
    run = trainer.start("_bench_corpus", spec, data, device=torch.device("cpu"))
    trainer.train(run, args.steps)
    wall = run.history.wall_s
    t0 = time.perf_counter()
    translator = Translator("_bench_corpus", run.model, run.vocabs, (data.src_tokenizer, data.tgt_tokenizer),
                            spec.max_tokens + 2)
    scores, _ = score_held_out(translator, data.held_out_text)
    decode_s = time.perf_counter() - t0
    print(f"training {wall:.0f} s ({sum(run.history.tokens) / wall:,.0f} tokens/s), final loss "
          f"{sum(run.history.losses[-50:]) / 50:.3f}; decoding {scores.n} held-out pairs {decode_s:.1f} s")
    print(f"BLEU {scores.bleu:.1f}  {scores.bleu_signature}")
    print(f"chrF {scores.chrf:.1f}  {scores.chrf_signature}")


if __name__ == "__main__":
    main()
