"""Vocabularies and batching: from lists of words to padded int64 tensors."""

from collections import Counter

import torch


class Vocab:
    """A word <-> id mapping built from token sequences.

    The four special tokens always come first, with fixed ids:

        <pad> = 0   fills the short rows of a batch
        <sos> = 1   starts every target sequence fed to the decoder
        <eos> = 2   ends every target sequence the decoder must produce
        <unk> = 3   stands for any token not in the vocabulary

    Then every other token that occurs at least `min_freq` times, most frequent
    first (ties broken alphabetically, so the same data always gives the same ids).
    Every occurrence counts: a token twice in one sentence is seen twice (count
    tokens, not the sentences they occur in). A token of the data spelled like a
    special ("<pad>", "<unk>", ...) is that special: it keeps the special's id and
    gets no second one.

    The grader relies on these names:
        PAD, SOS, EOS, UNK   the class attributes 0, 1, 2, 3
        itos                 list[str], id -> token
        stoi                 dict[str, int], token -> id
        encode(tokens)       list[str] -> list[int]; unknown tokens -> 3; no specials added
        decode(ids)          list[int] -> list[str]; every id mapped back as it is
                             (specials included: decode does not strip anything)
        len(vocab)           the number of tokens, specials included
    """

    PAD, SOS, EOS, UNK = 0, 1, 2, 3
    specials = ["<pad>", "<sos>", "<eos>", "<unk>"]

    def __init__(self, sequences, min_freq: int = 1):
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment4: Vocab.__init__")

    def encode(self, tokens) -> list:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment4: Vocab.encode")

    def decode(self, ids) -> list:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment4: Vocab.decode")

    def __len__(self) -> int:
        # TODO: your code here (the docstring above says what to build).
        raise NotImplementedError("assignment4: Vocab.__len__")


def collate(pairs, pad_idx: int):
    """Turn a list of (src_ids, tgt_ids) pairs into three padded int64 tensors.

    For a target sentence y1 .. yn the decoder reads <sos> y1 .. yn and must
    predict y1 .. yn <eos>, one position ahead (teacher forcing):

        src      src_ids as given, no specials added          (B, S)
        tgt_in   [<sos>] + tgt_ids                            (B, T)
        tgt_out  tgt_ids + [<eos>]                            (B, T)

    Each tensor is right-padded with `pad_idx` to its longest row in the batch
    (src and tgt are padded independently: S and T differ). tgt_in and tgt_out
    have the same length, T = longest target + 1. <sos> and <eos> are the Vocab
    ids 1 and 2. All three are torch.int64.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment4: collate")
