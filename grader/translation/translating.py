"""Translating with a trained model: a held-out split scored by sacreBLEU, a checkpoint's sentences.

Greedy decoding is the student's own greedy_decode (assignment4.decoding), batched; beam search is
the kit's (beam.py), a sentence at a time. Either way the text goes through the run's tokenizers:
split and numbered on the way in, numbers to tokens and tokens joined on the way out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.course_table import ConfigError
from grader.sandbox.child.tree import import_tree, resolve
from grader.training.bleu import Scores, score_corpus
from grader.translation import checkpoint as ckpt
from grader.translation.beam import BeamOptions, Hypothesis, beam_search
from grader.translation.tokenizing import Tokenizer, load_tokenizer

PAD, SOS, EOS, UNK = 0, 1, 2, 3  # the contract's Vocab ids (student-api.md, assignment4)


def own_vocab(pkg: str, itos: list[str]):
    """The tree's own Vocab (assignment4.data) holding a checkpoint's id -> token table, through the
    contract's names (`itos`, `stoi`): encoding and decoding are the student's own, never the kit's."""
    Vocab = resolve(pkg, "assignment4.data:Vocab")
    vocab = Vocab.__new__(Vocab)  # its table is the checkpoint's: nothing to count again
    vocab.itos = list(itos)
    vocab.stoi = {token: i for i, token in enumerate(vocab.itos)}
    return vocab


@dataclass
class Translator:
    """A trained model with what turns text into its ids and back."""

    pkg: str                 # the tree's package (import_tree), for its greedy_decode
    model: torch.nn.Module
    vocabs: tuple            # (src, tgt), each with encode / decode
    tokenizers: tuple[Tokenizer, Tokenizer]
    max_len: int             # ids a translation may have, <sos> and <eos> counted

    def encode(self, sentence: str) -> list[int]:
        ids = self.vocabs[0].encode(self.tokenizers[0].split(sentence))
        return ids[:self.max_len - 2] if self.max_len > 2 else ids

    def text(self, ids) -> str:
        """Output ids -> text: stop at <eos>, leave out <sos> and padding, join the tokens."""
        out = []
        for tok in self.vocabs[1].decode([int(i) for i in ids]):
            if tok == "<eos>":
                break
            if tok not in ("<sos>", "<pad>"):
                out.append(tok)
        return self.tokenizers[1].join(out)

    def greedy(self, sentences: list[str], batch_size: int = 128) -> list[str]:
        """The student's greedy_decode over `sentences`, `batch_size` at a time."""
        greedy_decode = resolve(self.pkg, "assignment4.decoding:greedy_decode")
        collate = resolve(self.pkg, "assignment4.data:collate")
        device = next(self.model.parameters()).device
        out: list[str] = []
        for i in range(0, len(sentences), batch_size):
            chunk: list[tuple[list[int], list[int]]] = [(self.encode(s) or [UNK], [])
                                                        for s in sentences[i:i + batch_size]]
            src, _, _ = collate(chunk, self.model.pad_idx)
            ys = greedy_decode(self.model, src.to(device), self.max_len, SOS, EOS)  # (B, L)
            out += [self.text(row) for row in ys.tolist()]
        return out

    def beam(self, sentence: str, beam_size: int, length_penalty: float = 0.0) -> list[tuple[str, Hypothesis]]:
        """The kit's beam search on one sentence: (text, hypothesis) best first."""
        options = BeamOptions(beam_size=beam_size, length_penalty=length_penalty, max_len=self.max_len,
                              sos=SOS, eos=EOS)
        return [(self.text(h.ids), h) for h in beam_search(self.model, self.encode(sentence) or [UNK],
                                                           options)]


def score_held_out(translator: Translator, pairs: list[tuple[str, str]]) -> tuple[Scores, list[str]]:
    """(sacreBLEU's scores, the translations) of the held-out `pairs` (text as read), greedy.

    Each reference goes through the target tokenizer and back (split, joined), as the translations
    come out: with words, "Don't go." is scored as "Don't go ."; BPE gives the text back as read."""
    hyps = translator.greedy([s for s, _ in pairs])
    tok = translator.tokenizers[1]
    return score_corpus(hyps, [tok.join(tok.split(t)) for _, t in pairs]), hyps


def load_translator(path: Path, submission: Path | None = None) -> tuple[Translator, ckpt.Checkpoint]:
    """The model of a checkpoint, built from its tree's Transformer (or `submission`'s), on the CPU."""
    checkpoint = ckpt.load(path)
    tree = submission or Path(checkpoint.spec.submission)
    if not (tree / "assignment3").is_dir():
        raise ConfigError(f"--submission: {str(tree)!r} has no assignment3/ (the tree the checkpoint was "
                          "trained with; give it with --submission)")
    pkg = "_grade_translate_" + hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:12]
    import_tree(tree, pkg)
    c = checkpoint.spec.config
    vocabs = (own_vocab(pkg, checkpoint.vocabs["src"]), own_vocab(pkg, checkpoint.vocabs["tgt"]))
    Transformer = resolve(pkg, "assignment3.transformer:Transformer")
    model = Transformer(len(vocabs[0]), len(vocabs[1]), d_model=c.d_model, n_heads=c.n_heads, n_layers=c.n_layers,
                        d_ff=c.d_ff, dropout=c.dropout, max_len=checkpoint.spec.max_tokens + 2, pad_idx=PAD,
                        norm_first=c.norm_first)
    model.load_state_dict(checkpoint.model)
    model.eval()
    t = checkpoint.tokenizers
    tokenizers = (load_tokenizer(t["kind"], t["src"]), load_tokenizer(t["kind"], t["tgt"]))
    return Translator(pkg, model, vocabs, tokenizers, checkpoint.spec.max_tokens + 2), checkpoint
