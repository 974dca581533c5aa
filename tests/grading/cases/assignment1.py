"""Fixed assignment1 cases whose reference outputs ship with the public tier (`grade expected`)."""

import torch

from grader.authoring.expected import Case


def _x(*shape):
    return lambda g: (torch.randn(*shape, generator=g) * 2 + 0.5,)


def _ids(vocab, *shape):
    return lambda g: (torch.randint(0, vocab, shape, generator=g),)


CASES = [
    Case("layer_norm", "assignment1.layer_norm:LayerNorm", (16,), _x(2, 5, 16)),
    Case("layer_norm_eps", "assignment1.layer_norm:LayerNorm", (8,), _x(3, 8), {"eps": 0.5}, seed=1),
    Case("feed_forward", "assignment1.feed_forward:PositionwiseFeedForward", (8, 32), _x(2, 5, 8)),
    Case("positional_encoding", "assignment1.positional_encoding:PositionalEncoding", (10,), _x(2, 7, 10),
         {"max_len": 50}),
    Case("token_embedding", "assignment1.embedding:TokenEmbedding", (11, 8), _ids(11, 2, 6), {"padding_idx": 0}),
    Case("transformer_embedding", "assignment1.embedding:TransformerEmbedding", (13, 12), _ids(13, 3, 5),
         {"max_len": 20, "dropout": 0.0, "padding_idx": 1}),
]
