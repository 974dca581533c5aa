"""The contract's targets, parameter names and shapes, and the masks it defines."""

import torch

from tests import strategies as s

# targets: "module:attribute" inside a submission -------------------------------------------
LAYER_NORM = "assignment1.layer_norm:LayerNorm"
FEED_FORWARD = "assignment1.feed_forward:PositionwiseFeedForward"
POSITIONAL_ENCODING = "assignment1.positional_encoding:PositionalEncoding"
TOKEN_EMBEDDING = "assignment1.embedding:TokenEmbedding"
TRANSFORMER_EMBEDDING = "assignment1.embedding:TransformerEmbedding"

SDPA = "assignment2.attention:scaled_dot_product_attention"
PAD_MASK = "assignment2.masks:make_pad_mask"
CAUSAL_MASK = "assignment2.masks:make_causal_mask"
TGT_MASK = "assignment2.masks:make_tgt_mask"
MHA = "assignment2.multi_head_attention:MultiHeadAttention"

RESIDUAL = "assignment3.sublayer:ResidualConnection"
ENCODER_LAYER = "assignment3.encoder:EncoderLayer"
ENCODER = "assignment3.encoder:Encoder"
DECODER_LAYER = "assignment3.decoder:DecoderLayer"
DECODER = "assignment3.decoder:Decoder"
TRANSFORMER = "assignment3.transformer:Transformer"

VOCAB = "assignment4.data:Vocab"
COLLATE = "assignment4.data:collate"
LOSS = "assignment4.training:LabelSmoothingLoss"
NOAM = "assignment4.training:noam_lr"
TRAIN_EPOCH = "assignment4.training:train_epoch"
GREEDY = "assignment4.decoding:greedy_decode"

# assignment4's special token ids
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


def name_of(target: str) -> str:
    return target.split(":")[-1]


# parameter names and shapes ----------------------------------------------------------------

def ff_shapes(d: int, f: int, p: str = "") -> dict:
    return {f"{p}linear1.weight": (f, d), f"{p}linear1.bias": (f,), f"{p}linear2.weight": (d, f),
            f"{p}linear2.bias": (d,)}


def mha_shapes(d: int, p: str = "") -> dict:
    return {f"{p}w_{n}.{w}": ((d, d) if w == "weight" else (d,)) for n in "qkvo" for w in ("weight", "bias")}


def norm_shapes(d: int, p: str = "") -> dict:
    return {f"{p}gamma": (d,), f"{p}beta": (d,)}


def encoder_layer_shapes(d: int, f: int, p: str = "") -> dict:
    return {**mha_shapes(d, f"{p}self_attn."), **ff_shapes(d, f, f"{p}feed_forward."),
            **{k: v for i in range(2) for k, v in norm_shapes(d, f"{p}residuals.{i}.norm.").items()}}


def decoder_layer_shapes(d: int, f: int, p: str = "") -> dict:
    return {**mha_shapes(d, f"{p}self_attn."), **mha_shapes(d, f"{p}cross_attn."),
            **ff_shapes(d, f, f"{p}feed_forward."),
            **{k: v for i in range(3) for k, v in norm_shapes(d, f"{p}residuals.{i}.norm.").items()}}


def stack_shapes(layer, n: int, d: int, f: int, p: str = "") -> dict:
    """An Encoder's or Decoder's names: `n` layers (layer = encoder_layer_shapes or decoder_layer_shapes), norm."""
    shapes = {}
    for i in range(n):
        shapes.update(layer(d, f, f"{p}layers.{i}."))
    return {**shapes, **norm_shapes(d, f"{p}norm.")}


def transformer_shapes(vs: int, vt: int, d: int, f: int, n: int) -> dict:
    return {"src_embed.token.embedding.weight": (vs, d), "tgt_embed.token.embedding.weight": (vt, d),
            **stack_shapes(encoder_layer_shapes, n, d, f, "encoder."),
            **stack_shapes(decoder_layer_shapes, n, d, f, "decoder."),
            "projection.weight": (vt, d), "projection.bias": (vt,)}


def random_state(shapes: dict, seed: int) -> dict:
    """Random weights by name: gammas near 1, betas near 0, the rest N(0, 0.5^2)."""
    state = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        if name.endswith("gamma"):
            state[name] = s.tensor(shape, seed + i, 0.3, 1.0)
        elif name.endswith("beta"):
            state[name] = s.tensor(shape, seed + i, 0.3)
        else:
            state[name] = s.tensor(shape, seed + i, 0.5)
    return state


# the contract's masks (True = may attend) --------------------------------------------------

def causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)


def masks(src_real, tgt_real=None):
    """src_mask (B, 1, 1, S) from src_real (B, S); with tgt_real (B, T) also tgt_mask (B, 1, T, T)."""
    src_mask = src_real[:, None, None, :]
    if tgt_real is None:
        return src_mask
    return src_mask, tgt_real[:, None, None, :] & causal(tgt_real.shape[1])
