"""`grade --repro` recipes for assignment 1's checks (tests/grading/public/repro.py lists them).

The expected values are computed here, as the checks compute them (torch's own functions, the
formula's oracle), and written into the script as numbers; weights a check draws from a seed (it
records the seed with its example) are drawn again here, the same."""

import math

import torch
import torch.nn.functional as F

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests import strategies as s
from tests.grading.helpers.names import FEED_FORWARD, LAYER_NORM, POSITIONAL_ENCODING, TOKEN_EMBEDDING
from tests.grading.helpers.oracles import feed_forward, ff_weights, pe_formula


def _layer_norm(ex: dict) -> str:
    x, eps, gamma, beta = ex["x"], ex["eps"], ex["gamma"], ex["beta"]
    expected = F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    return f'''
x = {literal(x)}
eps = {eps!r}
gamma = {literal(gamma)}
beta = {literal(beta)}
# torch.nn.LayerNorm(d_model, eps=eps) with weight gamma and bias beta, on x
expected = {literal(expected)}


def main() -> int:
    LayerNorm = load("{LAYER_NORM}")
    module = LayerNorm(x.shape[-1], eps=eps)
    if not give(module, {{"gamma": gamma, "beta": beta}}):
        return 1
    show(x=x, eps=eps, gamma=gamma, beta=beta)
    return verdict(compare("LayerNorm output", module(x), expected, atol=1e-5))
'''


def _feed_forward(ex: dict) -> str:
    x, d_ff = ex["x"], ex["d_ff"]
    w = ff_weights(x.shape[-1], d_ff, ex["seed"])
    return f'''
x = {literal(x)}
d_ff = {d_ff!r}
# the weights the check gave your module, by the contract's names (drawn from seed {ex["seed"]})
state = {literal(w)}
# linear2(relu(linear1(x))) with these weights
expected = {literal(feed_forward(x, w))}


def main() -> int:
    PositionwiseFeedForward = load("{FEED_FORWARD}")
    module = PositionwiseFeedForward(x.shape[-1], d_ff)
    if not give(module, state):
        return 1
    show(x=x, d_ff=d_ff)
    return verdict(compare("PositionwiseFeedForward output", module(x), expected, atol=1e-5))
'''


def _token_embedding(ex: dict) -> str:
    tokens, vocab, d = ex["tokens"], ex["vocab_size"], ex["d_model"]
    w = s.tensor([vocab, d], ex["seed"])
    return f'''
tokens = {literal(tokens)}
vocab_size, d_model = {vocab!r}, {d!r}
# the table the check gave your embedding (drawn from seed {ex["seed"]})
weight = {literal(w)}
# F.embedding(tokens, weight) * sqrt(d_model)
expected = {literal(F.embedding(tokens, w) * math.sqrt(d))}


def main() -> int:
    TokenEmbedding = load("{TOKEN_EMBEDDING}")
    module = TokenEmbedding(vocab_size, d_model)
    if not give(module, {{"embedding.weight": weight}}):
        return 1
    module.train()  # the check calls it as built (TokenEmbedding has no dropout)
    show(tokens=tokens, vocab_size=vocab_size, d_model=d_model)
    return verdict(compare("TokenEmbedding output", module(tokens), expected, atol=1e-5))
'''


def _token_embedding_scale(ex: dict) -> str:
    d = ex["d_model"]
    return f'''
d_model = {d!r}
tokens = torch.tensor([[0, 3]])
# an all-ones table: every output is sqrt(d_model) = {math.sqrt(d):.6g}
expected = {literal(torch.full((1, 2, d), math.sqrt(d)))}


def main() -> int:
    TokenEmbedding = load("{TOKEN_EMBEDDING}")
    module = TokenEmbedding(5, d_model)
    if not give(module, {{"embedding.weight": torch.ones(5, d_model)}}):
        return 1
    module.train()  # the check calls it as built (TokenEmbedding has no dropout)
    show(tokens=tokens, d_model=d_model)
    return verdict(compare("output for an all-ones embedding table", module(tokens), expected, atol=1e-5))
'''


def _positional_encoding(ex: dict) -> str:
    d, max_len = ex["d_model"], ex["max_len"]
    return f'''
d_model, max_len = {d!r}, {max_len!r}
# pe[p, 2i] = sin(p / 10000^(2i/d_model)), pe[p, 2i+1] = cos(same angle), in float64
expected = {literal(pe_formula(max_len, d))}
# the contract's allowance for a float32 table: 1e-5 + 2e-7 * p at row p
allowed = (1e-5 + 2e-7 * torch.arange(max_len, dtype=torch.float64))[:, None].expand(max_len, d_model)


def main() -> int:
    PositionalEncoding = load("{POSITIONAL_ENCODING}")
    show(d_model=d_model, max_len=max_len)
    pe = getattr(PositionalEncoding(d_model, max_len=max_len), "pe", None)
    got = pe.double() if isinstance(pe, torch.Tensor) else pe
    return verdict(compare("the pe buffer", got, expected, atol=allowed, rtol=0))
'''


BLOCK_RECIPES = {
    "layer_norm_matches_torch": Recipe(("x", "eps", "gamma", "beta"), _layer_norm),
    "feed_forward_matches_torch": Recipe(("x", "d_ff", "seed"), _feed_forward),
    "token_embedding_matches_torch": Recipe(("tokens", "vocab_size", "d_model", "seed"), _token_embedding),
    "token_embedding_scales_by_sqrt_d_model": Recipe(("d_model",), _token_embedding_scale),
    "positional_encoding_matches_formula": Recipe(("d_model", "max_len"), _positional_encoding),
}
