"""Greedy decoding: translate by emitting the single most likely next token, step by step."""

import torch

from ..assignment2.masks import make_pad_mask, make_tgt_mask


def greedy_decode(model, src: torch.Tensor, max_len: int, sos_idx: int, eos_idx: int) -> torch.Tensor:
    """Translate a batch of source sentences, one target token at a time.

    The source is encoded once; the target grows from a column of <sos>:

        memory = model.encode(src, make_pad_mask(src, model.pad_idx))    # (B, S, d_model)
        ys = [[sos], [sos], ...]                                           # (B, 1)
        repeat:
            out  = model.decode(memory, src_mask, ys, make_tgt_mask(ys, model.pad_idx))  # (B, t, d_model)
            next = model.projection(out[:, -1]).argmax(-1)                 # (B,) only the last position
            ys   = cat(ys, next)                                           # (B, t + 1)

    Rules:
      - put the model in eval mode (model.eval(), not restored afterwards) and
        run under torch.no_grad();
      - <sos> counts toward max_len: the result has L <= max_len columns;
      - a row that has emitted <eos> is finished: its later positions hold
        model.pad_idx, whatever the model would predict there;
      - stop as soon as every row has emitted <eos>, or when L reaches max_len;
      - the <sos> column is always there: with max_len <= 1 (0 or negative
        included) nothing is decoded and the result is that column alone, (B, 1).

    Because the decoder is causal, each emitted token equals the argmax of the
    teacher-forced forward pass model(src, ys) at that position.

    Shapes: src (B, S) int64 -> (B, L) int64, each row starting with sos_idx.

    sos_idx and eos_idx are the ids given (not always the Vocab's 1 and 2), and the
    padding is model.pad_idx.
    """
    # TODO: your code here (the docstring above says what to build).
    raise NotImplementedError("assignment4: greedy_decode")
