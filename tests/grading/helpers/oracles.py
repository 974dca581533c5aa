"""What a correct implementation computes, from formulas and PyTorch's own modules (the grader's side)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from tests import strategies as s
from tests.grading.helpers.names import causal

# assignment1 ---------------------------------------------------------------------------------

def pe_formula(max_len: int, d: int) -> torch.Tensor:
    """The sinusoidal table in float64, (max_len, d)."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d)[None, :]
    angle = p / 10000 ** ((i - i % 2).double() / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))  # (max_len, d)


def pe_tolerance(rows: int, d: int) -> torch.Tensor:
    """The contract's allowance for a float32 table: 1e-5 + 2e-7 * p at row p, (rows, d)."""
    return (1e-5 + 2e-7 * torch.arange(rows, dtype=torch.float64))[:, None].expand(rows, d)


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def ff_weights(d: int, f: int, seed: int) -> dict:
    return {"linear1.weight": s.tensor([f, d], seed, 0.5), "linear1.bias": s.tensor([f], seed + 1, 0.5),
            "linear2.weight": s.tensor([d, f], seed + 2, 0.5), "linear2.bias": s.tensor([d], seed + 3, 0.5)}


def feed_forward(x, w: dict) -> torch.Tensor:
    """linear2(relu(linear1(x))) with the contract's names, no dropout."""
    return F.linear(F.relu(F.linear(x, w["linear1.weight"], w["linear1.bias"])), w["linear2.weight"],
                    w["linear2.bias"])


def embed(weight, ids, dropout: float = 0.0) -> torch.Tensor:
    """TransformerEmbedding: embedding(ids) * sqrt(d) + pe, then dropout (train mode when dropout > 0)."""
    d = weight.shape[1]
    out = (F.embedding(ids, weight).double() * math.sqrt(d) + pe_formula(ids.shape[1], d)).float()
    return F.dropout(out, dropout, training=dropout > 0)


# assignment2 ---------------------------------------------------------------------------------

def attention(q, k, v, mask=None):
    """float64 output and weights; rows whose keys are all blocked come back as NaN."""
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = scores.softmax(-1)
    return w @ v.double(), w


def graded_rows(mask, shape) -> torch.Tensor:
    """(..., T_q) bool: the rows with at least one visible key (the others are not graded)."""
    if mask is None:
        return torch.ones(shape[:-1], dtype=torch.bool)
    return mask.expand(shape).any(-1)


def mha_weights(d: int, seed: int, scale: float = 0.5) -> dict:
    w = {}
    for i, n in enumerate(("w_q", "w_k", "w_v", "w_o")):
        w[f"{n}.weight"] = s.tensor([d, d], seed + 2 * i, scale)
        w[f"{n}.bias"] = s.tensor([d], seed + 2 * i + 1, scale)
    return w


def load_torch_mha(m: nn.MultiheadAttention, w: dict, prefix: str = ""):
    """Copy a contract-named state (w_q, w_k, w_v, w_o) into nn.MultiheadAttention."""
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([w[f"{prefix}w_{n}.weight"] for n in "qkv"]))
        m.in_proj_bias.copy_(torch.cat([w[f"{prefix}w_{n}.bias"] for n in "qkv"]))
        m.out_proj.weight.copy_(w[f"{prefix}w_o.weight"])
        m.out_proj.bias.copy_(w[f"{prefix}w_o.bias"])
    return m


def torch_mha(w: dict, d: int, h: int, q, k, v, key_padding=None, attn_mask=None):
    """nn.MultiheadAttention's output and per-head weights; masks in torch's polarity (True = blocked)."""
    m = load_torch_mha(nn.MultiheadAttention(d, h, dropout=0.0, batch_first=True), w).eval()
    out, weights = m(q, k, v, key_padding_mask=key_padding, attn_mask=attn_mask, need_weights=True,
                     average_attn_weights=False)  # grad enabled: the slow path, with weights per head
    return out.detach(), weights.detach()


# assignment3: PyTorch's layers given the contract's weights ------------------------------------

def _copy(dst, src):
    with torch.no_grad():
        dst.copy_(src)


def _load_ff_norms(layer, w, p, n_norms):
    for i in (1, 2):
        _copy(getattr(layer, f"linear{i}").weight, w[f"{p}feed_forward.linear{i}.weight"])
        _copy(getattr(layer, f"linear{i}").bias, w[f"{p}feed_forward.linear{i}.bias"])
    for i in range(n_norms):
        _copy(getattr(layer, f"norm{i + 1}").weight, w[f"{p}residuals.{i}.norm.gamma"])
        _copy(getattr(layer, f"norm{i + 1}").bias, w[f"{p}residuals.{i}.norm.beta"])


def _mode(layer, dropout: float):
    return layer.train() if dropout > 0 else layer.eval()  # dropout only acts in train mode


def torch_encoder_layer(w, p, d, h, f, nf, dropout: float = 0.0):
    """nn.TransformerEncoderLayer with the weights named `p...` of `w`; in train mode when dropout > 0."""
    layer = nn.TransformerEncoderLayer(d, h, f, dropout=dropout, activation="relu", batch_first=True, norm_first=nf)
    load_torch_mha(layer.self_attn, w, f"{p}self_attn.")
    _load_ff_norms(layer, w, p, 2)
    return _mode(layer, dropout)


def torch_decoder_layer(w, p, d, h, f, nf, dropout: float = 0.0):
    layer = nn.TransformerDecoderLayer(d, h, f, dropout=dropout, activation="relu", batch_first=True, norm_first=nf)
    load_torch_mha(layer.self_attn, w, f"{p}self_attn.")
    load_torch_mha(layer.multihead_attn, w, f"{p}cross_attn.")
    _load_ff_norms(layer, w, p, 3)
    return _mode(layer, dropout)


def torch_encode(w, x, src_real, d, h, f, n, nf, p="", dropout: float = 0.0):
    """PyTorch's encoder layers in a stack (grad enabled: the reference math path), final norm only if nf."""
    for i in range(n):
        x = torch_encoder_layer(w, f"{p}layers.{i}.", d, h, f, nf, dropout)(x, src_key_padding_mask=~src_real)
    if nf:
        x = layer_norm(x, w[f"{p}norm.gamma"], w[f"{p}norm.beta"])
    return x.detach()


def torch_decode(w, y, memory, src_real, tgt_real, d, h, f, n, nf, p="", dropout: float = 0.0):
    future = ~causal(y.shape[1])
    for i in range(n):
        y = torch_decoder_layer(w, f"{p}layers.{i}.", d, h, f, nf, dropout)(
            y, memory, tgt_mask=future, tgt_key_padding_mask=~tgt_real, memory_key_padding_mask=~src_real)
    if nf:
        y = layer_norm(y, w[f"{p}norm.gamma"], w[f"{p}norm.beta"])
    return y.detach()


def torch_transformer(w, src, tgt, pad, d, h, f, n, nf, dropout: float = 0.0):
    src_real, tgt_real = src != pad, tgt != pad
    memory = torch_encode(w, embed(w["src_embed.token.embedding.weight"], src, dropout), src_real, d, h, f, n, nf,
                          "encoder.", dropout)
    y = torch_decode(w, embed(w["tgt_embed.token.embedding.weight"], tgt, dropout), memory, src_real, tgt_real,
                     d, h, f, n, nf, "decoder.", dropout)
    return F.linear(y, w["projection.weight"], w["projection.bias"])
