"""Text -> tokens -> text, for a corpus: words (the default) or BPE subwords learnt from the corpus.

The tokens are strings either way: the student's own `Vocab` numbers them (assignment4.data), so
the model sees the ids of the submission's vocabulary whichever tokenizer split the text.

- `WordTokenizer`: words and punctuation marks ("Don't go." -> ["Don't", "go", "."]), joined back
  with spaces.
- `BpeTokenizer`: Hugging Face `tokenizers`' byte-pair encoding (Sennrich et al., 2016) trained on
  the training split of one side, with a Metaspace pre-tokenizer (a word's first piece carries "▁"),
  so that joining the pieces gives the text back.
"""

from __future__ import annotations

import re
from typing import Protocol

# a word (letters and digits, with inner apostrophes: "don't", "l'homme") or one other non-space character
_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
KINDS = ("word", "bpe")


class Tokenizer(Protocol):
    kind: str

    def split(self, text: str) -> list[str]: ...

    def join(self, tokens: list[str]) -> str: ...

    def to_json(self) -> str: ...


class WordTokenizer:
    kind = "word"

    def split(self, text: str) -> list[str]:
        return _WORD.findall(text)

    def join(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    def to_json(self) -> str:
        return ""


class BpeTokenizer:
    """A trained `tokenizers.Tokenizer`, kept whole (its JSON goes into the checkpoint and beside it)."""

    kind = "bpe"

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @classmethod
    def train(cls, texts: list[str], vocab_size: int) -> BpeTokenizer:
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>"], show_progress=False)
        tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
        return cls(tok)

    @classmethod
    def from_json(cls, text: str) -> BpeTokenizer:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(text))

    def to_json(self) -> str:
        return self.tokenizer.to_str()

    def split(self, text: str) -> list[str]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).tokens)

    def join(self, tokens: list[str]) -> str:
        return self.tokenizer.decoder.decode(list(tokens)).strip()


def train_tokenizers(kind: str, pairs: list[tuple[str, str]], vocab_size: int) -> tuple[Tokenizer, Tokenizer]:
    """(source tokenizer, target tokenizer) of `kind`, BPE ones learnt from `pairs` (the training split)."""
    if kind == "word":
        return WordTokenizer(), WordTokenizer()
    if kind != "bpe":
        raise ValueError(f"kind: one of {', '.join(KINDS)}, got {kind!r}")
    return (BpeTokenizer.train([s for s, _ in pairs], vocab_size),
            BpeTokenizer.train([t for _, t in pairs], vocab_size))


def load_tokenizer(kind: str, text: str) -> Tokenizer:
    """The tokenizer a checkpoint recorded (`text`: to_json()'s)."""
    return WordTokenizer() if kind == "word" else BpeTokenizer.from_json(text)
