"""`grade train assignment4 --data PATH`: train a tree's Transformer on a parallel corpus of the user's.

The route of `grade train` (grader/commands/train.py parses) for a corpus: read it strictly, split off
a held-out part by the seed, tokenize, train with live progress and checkpoints (grader.translation),
stop cleanly on Ctrl-C, resume bit for bit with --resume, and score the held-out part with sacreBLEU.
As the bundled route, the tree's code runs in this process: a student's command on their own code.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from grader.commands import positive_int
from grader.course import find_course
from grader.course_table import ConfigError
from grader.training.library import TrainConfig
from grader.translation import checkpoint as ckpt
from grader.translation.corpus import CorpusSource
from grader.translation.tokenizing import KINDS

# a corpus run's defaults beside the bundled task's (TrainConfig's): a larger model, more steps
CORPUS_CONFIG = TrainConfig(steps=4000, d_model=128, n_heads=4, n_layers=2, d_ff=512, warmup=400)
MAX_TOKENS, BPE_VOCAB, CHECKPOINT_EVERY = 50, 8000, 500
# what --resume takes from the checkpoint: given as well, these are refused (dest -> flag)
FROM_CHECKPOINT = {"data": "--data", "seed": "--seed"}


def _columns(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SRC,TGT column numbers from 1, e.g. 1,2; got {text!r}") from None
    if min(a, b) < 1 or a == b:
        raise argparse.ArgumentTypeError(f"expected two different column numbers counted from 1, got {text!r}")
    return a, b


def add_corpus_options(p: argparse.ArgumentParser) -> None:
    """--data and what goes with it (dest corpus_*: given without --data or --resume, refused)."""
    g = p.add_argument_group("a corpus of your own (--data)")
    g.add_argument("--data", metavar="PATH", help="a tab-separated file of pairs (Tatoeba/Anki: source, target, "
                   "further columns ignored), or with --target-data the source side's text file")
    g.add_argument("--target-data", dest="corpus_target", metavar="PATH",
                   help="the target side: a text file aligned line for line with --data")
    g.add_argument("--columns", dest="corpus_columns", type=_columns, metavar="SRC,TGT",
                   help="the columns of --data's pairs, counted from 1 (default: 1,2)")
    g.add_argument("--limit", dest="corpus_limit", type=positive_int, metavar="N", help="read the first N pairs only")
    g.add_argument("--max-tokens", dest="corpus_max_tokens", type=positive_int, metavar="N",
                   help=f"leave out pairs with more tokens on a side (default: {MAX_TOKENS})")
    g.add_argument("--held-out", dest="corpus_held_out", type=positive_int, metavar="N",
                   help="pairs drawn by the seed and scored, not trained on (default: a tenth, at most 1000)")
    g.add_argument("--tokenizer", dest="corpus_tokenizer", choices=KINDS,
                   help="words (your Vocab over words and punctuation) or BPE subwords learnt from the training "
                   "split with Hugging Face tokenizers, saved beside the checkpoint (default: word)")
    g.add_argument("--bpe-vocab", dest="corpus_bpe_vocab", type=positive_int, metavar="N",
                   help=f"BPE vocabulary size of each side (default: {BPE_VOCAB})")
    for flag, name in (("--d-model", "d_model"), ("--heads", "n_heads"), ("--layers", "n_layers"),
                       ("--batch-size", "batch_size"), ("--warmup", "warmup")):
        g.add_argument(flag, dest=f"corpus_{name}", type=positive_int, metavar="N",
                       help=f"the model's or the schedule's {name} (default: {getattr(CORPUS_CONFIG, name)}; "
                       f"d_ff is 4 x d_model)")
    g.add_argument("--checkpoint-every", dest="corpus_checkpoint_every", type=positive_int, metavar="N",
                   help=f"write OUT/checkpoint.pt every N steps, and at the end (default: {CHECKPOINT_EVERY})")
    g.add_argument("--resume", action="store_true",
                   help="continue the run whose checkpoint is in --out, with its corpus and settings")
    g.add_argument("--no-pictures", dest="corpus_no_pictures", action="store_const", const=True,
                   help="draw no PNGs (the training curve, an attention map) at the end")
    g.add_argument("--device", dest="corpus_device", metavar="DEV",
                   help="cpu, or cuda (a GPU: bfloat16 mixed precision) (default: cpu)")


def _spec(args: argparse.Namespace) -> ckpt.RunSpec:
    from grader.course import load as load_course

    if args.submission:
        submission = Path(args.submission)
    else:
        submission = load_course(find_course(args.course)).assignments_dir
    if not submission.is_dir():
        raise ConfigError(f"--submission: {str(submission)!r} is not a directory")
    d_model = args.corpus_d_model or CORPUS_CONFIG.d_model
    config = replace(CORPUS_CONFIG, **{k: getattr(args, f"corpus_{k}") for k in ("n_heads", "n_layers",
                     "batch_size", "warmup") if getattr(args, f"corpus_{k}") is not None},
                     d_model=d_model, d_ff=4 * d_model, steps=args.steps or CORPUS_CONFIG.steps)
    if config.d_model % config.n_heads:
        raise ConfigError(f"--d-model {config.d_model} is not a multiple of --heads {config.n_heads}")
    corpus = CorpusSource(Path(args.data), target=Path(args.corpus_target) if args.corpus_target else None,
                          columns=args.corpus_columns or (1, 2), limit=args.corpus_limit)
    if corpus.target is not None and args.corpus_columns:
        raise ConfigError("--columns: for one tab-separated file; --target-data gives the target side whole")
    return ckpt.RunSpec(submission=str(submission.resolve()), corpus=corpus, config=config, seed=args.seed or 0,
                        held_out=args.corpus_held_out, tokenizer=args.corpus_tokenizer or "word",
                        bpe_vocab=args.corpus_bpe_vocab or BPE_VOCAB, max_tokens=args.corpus_max_tokens or MAX_TOKENS,
                        checkpoint_every=args.corpus_checkpoint_every or CHECKPOINT_EVERY)


def _resumed_spec(args: argparse.Namespace, resumed: ckpt.Checkpoint) -> ckpt.RunSpec:
    given = [FROM_CHECKPOINT.get(k, "--" + k.removeprefix("corpus_").replace("_", "-"))
             for k, v in vars(args).items() if v is not None and (k in FROM_CHECKPOINT or k.startswith("corpus_"))
             and k not in ("corpus_device", "corpus_no_pictures")]
    if given:
        raise ConfigError(f"{given[0]}: --resume takes the corpus and the settings from the checkpoint "
                          "(give --out, and --steps, --device or --submission if they change)")
    spec = resumed.spec
    if args.submission:
        spec = replace(spec, submission=str(Path(args.submission).resolve()))
    if args.steps:
        spec = replace(spec, config=replace(spec.config, steps=args.steps))
    return spec


def corpus_main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from grader.commands.corpus_run import Display, train_corpus
    from grader.translation.trainer import check_device

    device = check_device(args.corpus_device or "cpu")
    out = Path(args.out)
    if args.resume:
        resumed = ckpt.load(out)
        spec = _resumed_spec(args, resumed)
    else:
        resumed, spec = None, _spec(args)
        if (out / ckpt.NAME).exists():
            raise ConfigError(f"--out: {out} holds a checkpoint already: continue it with --resume, or give "
                              "another --out")
    return train_corpus(spec=spec, out=out, resumed=resumed, device=device,
                        display=Display(Console(), pictures=not args.corpus_no_pictures))
