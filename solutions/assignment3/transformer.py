"""The full encoder-decoder Transformer: token ids in, next-token logits out."""

import torch
import torch.nn as nn

from ..assignment1.embedding import TransformerEmbedding
from ..assignment2.masks import make_pad_mask, make_tgt_mask
from .decoder import Decoder
from .encoder import Encoder


class Transformer(nn.Module):
    """Embed the source and encode it; embed the target and decode it against the source.

        memory = encoder(src_embed(src), src_mask)                    # (B, S, d_model)
        out    = decoder(tgt_embed(tgt), memory, src_mask, tgt_mask)  # (B, T, d_model)
        logits = projection(out)                                      # (B, T, tgt_vocab_size)

    Methods (greedy decoding in assignment4 calls encode and decode separately):
        encode(src, src_mask) -> memory (B, S, d_model)
        decode(memory, src_mask, tgt, tgt_mask) -> (B, T, d_model), before the projection
        forward(src, tgt) -> logits (B, T, tgt_vocab_size); builds its own masks:
            src_mask = make_pad_mask(src, pad_idx)    # (B, 1, 1, S)
            tgt_mask = make_tgt_mask(tgt, pad_idx)    # (B, 1, T, T)
    src (B, S) and tgt (B, T) are int64 token ids; masks are bool, True = may attend.

    The grader relies on these names:
        src_embed   TransformerEmbedding(src_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)
        tgt_embed   TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)
        encoder     Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        decoder     Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        projection  nn.Linear(d_model, tgt_vocab_size)
        pad_idx     the padding token id

    Initialisation: every parameter with more than one dimension (weight matrices and
    embedding tables) gets nn.init.xavier_uniform_; then the embeddings' padding rows
    are set back to zero (under torch.no_grad()). Passing padding_idx=pad_idx on to
    the embeddings (as above) also gives the padding rows no gradient, so that they
    stay zero in training: the grader checks that gradient on a freshly built model.
    Every part is built with the arguments above (the settings given to the
    Transformer, passed on), and checked as built, before weights are loaded.

    Do not use torch.nn.Transformer or any torch.nn.Transformer* module.

    Batch elements are independent: changing one sequence of the batch changes no
    other's output. A key that the mask blocks (padding) has no effect on any output. No
    position sees a later target position: tgt_mask is causal.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512,
                 n_heads: int = 8, n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1,
                 max_len: int = 5000, pad_idx: int = 0, norm_first: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        self.pad_idx = pad_idx
        self.src_embed = TransformerEmbedding(src_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)
        self.tgt_embed = TransformerEmbedding(tgt_vocab_size, d_model, max_len, dropout, padding_idx=pad_idx)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.projection = nn.Linear(d_model, tgt_vocab_size)

        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        # Xavier also filled the padding rows; padding must embed to zero
        with torch.no_grad():
            self.src_embed.token.embedding.weight[pad_idx].zero_()
            self.tgt_embed.token.embedding.weight[pad_idx].zero_()
        ### END SOLUTION

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return self.encoder(self.src_embed(src), src_mask)  # (B, S, d_model)
        ### END SOLUTION

    def decode(self, memory: torch.Tensor, src_mask: torch.Tensor, tgt: torch.Tensor,
               tgt_mask: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)  # (B, T, d_model)
        ### END SOLUTION

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        src_mask = make_pad_mask(src, self.pad_idx)  # (B, 1, 1, S)
        tgt_mask = make_tgt_mask(tgt, self.pad_idx)  # (B, 1, T, T)
        memory = self.encode(src, src_mask)  # (B, S, d_model)
        return self.projection(self.decode(memory, src_mask, tgt, tgt_mask))  # (B, T, tgt_vocab_size)
        ### END SOLUTION
