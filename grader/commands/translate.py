"""`grade translate CHECKPOINT [SENTENCE ...]`: translate with a model that `grade train --data` trained.

Sentences from the command line, or a line each from standard input when none is given; one
translation a line on standard output, in order (for a pipe). Greedy decoding is the student's own
greedy_decode; --beam N the kit's beam search (grader.translation.beam). As `grade train`, the tree's
code runs in this process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.commands import positive_int
from grader.course_table import ConfigError
from grader.usage import UsageParser


def _penalty(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number at least 0, got {text!r}")
    return value


def main(argv: list[str]) -> int:
    p = UsageParser(prog="grade translate", description="Translate sentences with a checkpoint of "
                    "`grade train assignment4 --data` (one a line from standard input when none is given).")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="a checkpoint.pt, or the --out folder holding one")
    p.add_argument("sentences", metavar="SENTENCE", nargs="*", help="the sentences to translate")
    p.add_argument("--beam", type=positive_int, default=None, metavar="N",
                   help="beam search with N hypotheses (default: your greedy_decode)")
    p.add_argument("--length-penalty", type=_penalty, default=0.0, metavar="ALPHA",
                   help="beam search ranks by log P / ((5 + length) / 6) ** ALPHA (default: %(default)s)")
    p.add_argument("--attention-map", metavar="PNG",
                   help="draw the cross-attention of the last decoder layer for the (one) sentence")
    p.add_argument("--submission", metavar="DIR",
                   help="the tree whose Transformer the checkpoint holds (default: the one it was trained with)")
    args = p.parse_intermixed_args(argv)  # sentences before or after the options
    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "checkpoint.pt" if checkpoint.is_dir() else checkpoint).is_file():
        raise ConfigError(f"{checkpoint}: no such checkpoint (grade train assignment4 --data writes one)")
    sentences = args.sentences or [line.strip() for line in sys.stdin if line.strip()]
    if not sentences:
        raise ConfigError("no sentence to translate: give them as arguments or a line each on standard input")
    if args.attention_map and len(sentences) != 1:
        raise ConfigError(f"--attention-map: one sentence at a time, got {len(sentences)}")
    if args.attention_map and not args.attention_map.lower().endswith(".png"):
        raise ConfigError(f"--attention-map: a .png file name, got {args.attention_map!r}")
    if args.attention_map:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ConfigError("--attention-map: needs matplotlib (pip install matplotlib, or the kit's "
                              "[plots] extra)") from None
    return translate(checkpoint=checkpoint, sentences=sentences, beam=args.beam,
                     length_penalty=args.length_penalty, attention_map=args.attention_map,
                     submission=Path(args.submission) if args.submission else None)


def translate(*, checkpoint: Path, sentences: list[str], beam: int | None = None, length_penalty: float = 0.0,
              attention_map: str | None = None, submission: Path | None = None) -> int:
    """Print a translation a line; 0, or 1 when the tree cannot be imported or raises."""
    from grader.translation.translating import load_translator

    translator, _ = load_translator(checkpoint, submission)
    try:
        if beam is None:
            lines = translator.greedy(sentences)
        else:
            lines = [translator.beam(s, beam, length_penalty)[0][0] for s in sentences]
    except NotImplementedError as exc:
        print(f"grade translate: not implemented yet: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line, flush=True)
    if attention_map:
        return _draw(translator, sentences[0], Path(attention_map))
    return 0


def _draw(translator, sentence: str, path: Path) -> int:
    from grader.render.plots import save_attention_map
    from grader.training.library import cross_attention

    src_tokens = translator.tokenizers[0].split(sentence)[:max(translator.max_len - 2, 1)]
    weights, out_tokens = cross_attention(translator.pkg, translator.model, src_tokens, *translator.vocabs,
                                          max_len=translator.max_len)
    save_attention_map(path, weights.detach().cpu(), src_tokens, out_tokens)
    print(f"attention map: {path}", file=sys.stderr)
    return 0
