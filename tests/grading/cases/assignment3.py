"""Fixed assignment3 cases whose reference outputs ship with the public tier (`grade expected`)."""

import torch

from grader.authoring.expected import Case


def _lengths_mask(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T) True = real


def _encoder_inputs(B, S, d, lengths):
    return lambda g: (torch.randn(B, S, d, generator=g), _lengths_mask(lengths, S)[:, None, None, :])


def _decoder_inputs(B, T, S, d, src_lengths, tgt_lengths):
    def make(g):
        tgt = _lengths_mask(tgt_lengths, T)[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
        return (torch.randn(B, T, d, generator=g), torch.randn(B, S, d, generator=g),
                _lengths_mask(src_lengths, S)[:, None, None, :], tgt)
    return make


def _tokens(vs, vt, pad, S, T, src_lengths, tgt_lengths):
    def make(g):
        src, tgt = torch.randint(0, vs, (len(src_lengths), S), generator=g), torch.randint(0, vt, (len(tgt_lengths), T),
                                                                                         generator=g)
        src[src == pad], tgt[tgt == pad] = pad + 1, pad + 1
        src[~_lengths_mask(src_lengths, S)], tgt[~_lengths_mask(tgt_lengths, T)] = pad, pad
        return src, tgt
    return make


EL, ENC = "assignment3.encoder:EncoderLayer", "assignment3.encoder:Encoder"
DL, DEC = "assignment3.decoder:DecoderLayer", "assignment3.decoder:Decoder"
TR = "assignment3.transformer:Transformer"
TR_KW = {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "dropout": 0.0, "max_len": 20, "pad_idx": 0}

CASES = [
    Case("encoder_layer_post_norm", EL, (8, 2, 16), _encoder_inputs(2, 5, 8, [5, 3]), {"dropout": 0.0}),
    Case("encoder_layer_pre_norm", EL, (8, 2, 16), _encoder_inputs(2, 5, 8, [4, 5]),
         {"dropout": 0.0, "norm_first": True}, seed=1),
    Case("encoder_post_norm", ENC, (2, 8, 2, 16), _encoder_inputs(2, 6, 8, [6, 2]), {"dropout": 0.0}, seed=2),
    Case("encoder_pre_norm", ENC, (2, 8, 2, 16), _encoder_inputs(3, 4, 8, [4, 1, 3]),
         {"dropout": 0.0, "norm_first": True}, seed=3),
    Case("decoder_layer_post_norm", DL, (8, 2, 16), _decoder_inputs(2, 5, 4, 8, [4, 2], [5, 3]), {"dropout": 0.0}),
    Case("decoder_layer_pre_norm", DL, (8, 2, 16), _decoder_inputs(2, 4, 6, 8, [6, 3], [4, 4]),
         {"dropout": 0.0, "norm_first": True}, seed=1),
    Case("decoder_post_norm", DEC, (2, 8, 2, 16), _decoder_inputs(2, 5, 4, 8, [4, 2], [5, 3]), {"dropout": 0.0},
         seed=2),
    Case("decoder_pre_norm", DEC, (2, 8, 2, 16), _decoder_inputs(2, 6, 3, 8, [3, 1], [6, 4]),
         {"dropout": 0.0, "norm_first": True}, seed=3),
    Case("transformer_post_norm", TR, (11, 13), _tokens(11, 13, 0, 5, 4, [5, 3], [4, 2]), TR_KW),
    Case("transformer_pre_norm", TR, (11, 13), _tokens(11, 13, 0, 4, 6, [2, 4], [6, 3]),
         {**TR_KW, "norm_first": True}, seed=1),
]
