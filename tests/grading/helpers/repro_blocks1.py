"""`grade --repro` recipes for assignment 1's property and dropout checks, and (repro_blocks1_sdpa.py)
assignment 2's attention edge cases (tests/grading/public/repro.py lists them).

Where a Hypothesis check draws weights from a seed it does not record (its source cannot change: it
seeds the draws), the script draws its own and says so: those checks claim what holds for any weights
(dropout's placement, positions kept apart, gradients), and their bugs show on these too."""

import torch
import torch.nn.functional as F

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests import strategies as s
from tests.grading.helpers.names import (
    FEED_FORWARD,
    LAYER_NORM,
    POSITIONAL_ENCODING,
    TOKEN_EMBEDDING,
    TRANSFORMER_EMBEDDING,
)
from tests.grading.helpers.oracles import embed, feed_forward, ff_weights, pe_formula
from tests.grading.helpers.repro_blocks1_sdpa import SDPA_RECIPES, SDPA_WHY_NOT, placement, tensor_or_say
from tests.grading.helpers.repro_leaks import builder, dropout_main, values

OWN_SEED = 12345  # the seed of the weights a script draws where the check's are not recorded
OWN = "not recorded by the check: drawn here from seed {seed} (any weights show what the check claims)"


def _rows_normalised(ex: dict) -> str:
    return values(x=ex["x"]) + f'''

def main() -> int:
    LayerNorm = load("{LAYER_NORM}")
    show(x=x)
    y = LayerNorm(x.shape[-1])(x)  # as built: gamma 1, beta 0
{tensor_or_say("y", "x.shape", "LayerNorm output")}
    y = y.detach().double()
    ok = compare("row mean of the output", y.mean(-1), torch.zeros(x.shape[:-1], dtype=torch.float64), atol=1e-4)
    # variance 1, or var_x / (var_x + eps) for a row of nearly equal values
    var, var_x = y.var(-1, unbiased=False), x.double().var(-1, unbiased=False)
    ok &= compare("row variance of the output", var, var_x / (var_x + 1e-5), atol=2e-3, rtol=0)
    # normalising a row keeps the order of its values: y taken in x's order never decreases
    ranked = torch.gather(y, -1, torch.argsort(x.double(), dim=-1))
    ok &= compare("output values in the order of x's", ranked, ranked.cummax(-1).values, atol=1e-6)
    return verdict(ok)
'''


def _default_eps(ex: dict) -> str:
    x, d = ex["x"], ex["d_model"]
    return values(x=x, d_model=d) + f'''\
# torch.nn.LayerNorm(d_model) (eps=1e-5, its default and the contract's) on x: rows of variance about 1e-6
expected = {literal(torch.nn.LayerNorm(d)(x).detach())}


def main() -> int:
    LayerNorm = load("{LAYER_NORM}")
    show(x=x, d_model=d_model)
    got = LayerNorm(d_model)(x)
    return verdict(compare("LayerNorm(d_model) output with the default eps", got, expected, atol=1e-4, rtol=1e-4))
'''


def _gamma_beta(ex: dict) -> str:
    x, gamma, beta = ex["x"], ex["gamma"], ex["beta"]
    truth = F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=1e-5)
    return values(x=x, gamma=gamma, beta=beta) + f'''\
# for reference: torch.nn.LayerNorm with these gamma and beta (not what is compared)
torch_output = {literal(truth)}


def main() -> int:
    LayerNorm = load("{LAYER_NORM}")
    show(x=x, gamma=gamma, beta=beta)
    plain = LayerNorm(x.shape[-1])(x)  # as built: gamma 1, beta 0
{tensor_or_say("plain", "x.shape", "LayerNorm output")}
    module = LayerNorm(x.shape[-1])
    if not give(module, {{"gamma": gamma, "beta": beta}}):
        return 1
    print("torch.nn.LayerNorm with these gamma and beta:", torch_output, sep="\\n")
    # compared with your own output without them, times gamma plus beta
    return verdict(compare("output with gamma and beta", module(x), plain.detach() * gamma + beta, atol=1e-4))
'''


def _gradients(ex: dict) -> str:
    x, eps = ex["x"], ex["eps"]
    grad_out = s.tensor(x.shape, OWN_SEED)
    xg = x.clone().requires_grad_(True)
    ref = torch.nn.LayerNorm(x.shape[-1], eps=eps)
    (ref(xg) * grad_out).sum().backward()
    return values(x=x, eps=eps) + f'''\
# the gradient flowing back into the output: {OWN.format(seed=OWN_SEED)}
grad_output = {literal(grad_out)}
# torch.nn.LayerNorm(d_model, eps=eps)'s gradients for it
expected_x = {literal(xg.grad)}
expected_gamma = {literal(ref.weight.grad)}
expected_beta = {literal(ref.bias.grad)}


def main() -> int:
    LayerNorm = load("{LAYER_NORM}")
    module = LayerNorm(x.shape[-1], eps=eps)
    show(x=x, eps=eps)
    given = x.clone().requires_grad_(True)
    (module(given) * grad_output).sum().backward()
    own = dict(module.named_parameters())
    ok = compare("gradient with respect to x", given.grad, expected_x, atol=1e-4)
    for name, expected in (("gamma", expected_gamma), ("beta", expected_beta)):
        ok &= compare(f"gradient of {{name}}", getattr(own.get(name), "grad", None), expected, atol=1e-4)
    return verdict(ok)
'''


def _ff_dropout_eval(ex: dict) -> str:
    x, f = ex["x"], ex["d_ff"]
    w = ff_weights(x.shape[-1], f, OWN_SEED)
    return values(x=x, d_ff=f) + f'''\
# the weights: {OWN.format(seed=OWN_SEED)}
# linear2(relu(linear1(x))) with these weights, without dropout
expected = {literal(feed_forward(x, w))}
''' + builder(FEED_FORWARD, (x.shape[-1], f), {"dropout": 0.9}, w) + dropout_main(
        "x=x, d_ff=d_ff", "x", "PositionwiseFeedForward", 1e-5)


def _ff_placement(ex: dict) -> str:
    x, f, b2 = ex["x"], ex["d_ff"], ex["linear2_bias"]
    w = {**ff_weights(x.shape[-1], f, OWN_SEED), "linear2.bias": b2}
    return values(x=x, d_ff=f, linear2_bias=b2) + f'''\
# linear2.bias at every position: linear2 of all-zero hidden activations (dropout(relu(linear1(x))) drops all)
expected = {literal(b2.expand(x.shape).clone())}
# the weights other than linear2.bias are {OWN.format(seed=OWN_SEED)}
''' + builder(FEED_FORWARD, (x.shape[-1], f), {"dropout": 1.0}, w) + placement(
        "x=x, d_ff=d_ff, linear2_bias=linear2_bias", "x", "PositionwiseFeedForward", 1e-5, None)


def _ff_positions(ex: dict) -> str:
    x, changed, t = ex["x"], ex["changed_x"], ex["changed_position"]
    w = ff_weights(x.shape[-1], 16, OWN_SEED)
    return values(x=x, changed_x=changed) + f'''\
changed_position = {t!r}  # changed_x differs from x only there
# the weights: {OWN.format(seed=OWN_SEED)}
''' + builder(FEED_FORWARD, (x.shape[-1], 16), {"dropout": 0.0}, w) + f'''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(x=x, changed_x=changed_x, changed_position=changed_position)
    before = module(x)
{tensor_or_say("before", "x.shape", "PositionwiseFeedForward output")}
    before, after = before.detach(), module(changed_x).detach()
    others = torch.arange(x.shape[1]) != changed_position
    # compared with your own output before the change
    ok = compare("outputs at the positions that did not change", after[:, others], before[:, others], atol=1e-5)
    if torch.allclose(after[:, changed_position], before[:, changed_position], atol=1e-6):
        print("--- the output at the changed position did not change: it should")
        ok = False
    return verdict(ok)
'''


def _pe_adds(ex: dict) -> str:
    x = ex["x"]
    _, T, d = x.shape
    return values(x=x) + f'''\
# x + pe[:T], pe[p, 2i] = sin(p / 10000^(2i/d_model)), pe[p, 2i+1] = cos(same angle), in float64
expected = {literal((x.double() + pe_formula(T, d)).float())}


def main() -> int:
    PositionalEncoding = load("{POSITIONAL_ENCODING}")
    show(x=x)
    module = PositionalEncoding(x.shape[-1], max_len=x.shape[1] + 3).eval()
    return verdict(compare("PositionalEncoding output", module(x), expected, atol=1e-5))
'''


def _pe_sum(x) -> torch.Tensor:
    return (x.double() + pe_formula(x.shape[1], x.shape[2])).float()


def _pe_dropout_eval(ex: dict) -> str:
    x, max_len = ex["x"], ex["max_len"]
    return values(x=x, max_len=max_len) + f'''\
# x + pe[:T] (the formula's table, in float64), without dropout
expected = {literal(_pe_sum(x))}
''' + builder(POSITIONAL_ENCODING, (x.shape[-1],), {"max_len": max_len, "dropout": 0.9}, {}) + dropout_main(
        "x=x, max_len=max_len", "x", "PositionalEncoding", 1e-5)


def _pe_placement(ex: dict) -> str:
    x, max_len = ex["x"], ex["max_len"]
    return values(x=x, max_len=max_len) + f'''\
# in eval() mode: x + pe[:T]; in train() mode: all zeros (dropout(x + pe[:T]) drops every value)
in_eval = {literal(_pe_sum(x))}
expected = torch.zeros_like(x)
''' + builder(POSITIONAL_ENCODING, (x.shape[-1],), {"max_len": max_len, "dropout": 1.0}, {}) + placement(
        "x=x, max_len=max_len", "x", "PositionalEncoding", 1e-5, "in_eval")


def _padding_main(target: str, module: str, name: str, shown: str) -> str:
    """main(): `module` (source) embeds `tokens`: zeros exactly at padding_idx, non-zero vectors elsewhere."""
    return f'''

def main() -> int:
    made = load("{target}")
    show({shown})
    out = {module}(tokens)
{tensor_or_say("out", "tokens.shape + (d_model,)", name)}
    out = out.detach()
    at_pad = tokens == padding_idx
    ok = compare("{name} of padding_idx", out[at_pad], torch.zeros(int(at_pad.sum()), d_model), atol=0, rtol=0)
    if bool((out[~at_pad].abs().sum(-1) == 0).any()):
        print("--- a real token (not padding_idx) embeds to a zero vector: only padding_idx should")
        ok = False
    return verdict(ok)
'''


def _token_padding(ex: dict) -> str:
    tokens, pad = ex["tokens"], ex["padding_idx"]
    vocab = max(int(tokens.max()), pad) + 1
    return values(tokens=tokens, padding_idx=pad) + f'''\
# the check's vocab_size and d_model are not recorded: any that hold these tokens show the padding row
vocab_size, d_model = {vocab!r}, 4
''' + _padding_main(TOKEN_EMBEDDING, "made(vocab_size, d_model, padding_idx=padding_idx)",
                    "embedding", "tokens=tokens, padding_idx=padding_idx")


def _te_padding(ex: dict) -> str:
    names = ("tokens", "vocab_size", "d_model", "max_len", "padding_idx")
    return values(**{k: ex[k] for k in names}) + _padding_main(
        TRANSFORMER_EMBEDDING, "made(vocab_size, d_model, max_len=max_len, dropout=0.0, padding_idx=padding_idx)"
        ".eval().token", "self.token's embedding, as built", ", ".join(f"{k}={k}" for k in names))


def _te_parts(ex: dict) -> str:
    tokens, d = ex["tokens"], ex["d_model"]
    vocab = int(tokens.max()) + 1
    w = s.tensor([vocab, d], OWN_SEED)
    return values(tokens=tokens, d_model=d) + f'''\
# the embedding table (and the vocab_size, {vocab}, that holds these tokens): {OWN.format(seed=OWN_SEED)}
# embedding(tokens) * sqrt(d_model) + pe[:T], in float64
expected = {literal(embed(w, tokens))}
''' + builder(TRANSFORMER_EMBEDDING, (vocab, d), {"max_len": 10, "dropout": 0.0}, {"token.embedding.weight": w}) + '''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(tokens=tokens, d_model=d_model)
    return verdict(compare("TransformerEmbedding output", module(tokens), expected, atol=1e-4))
'''


def _te_dropout(seed: int, sits: bool):
    """The TransformerEmbedding dropout checks: their table is s.tensor([8, 8], seed), a constant of the check."""
    def body(ex: dict) -> str:
        tokens, w = ex["tokens"], s.tensor([8, 8], seed)
        head = values(tokens=tokens) + f'''\
# embedding(tokens) * sqrt(d_model) + pe[:T] with the check's table, without dropout
clean = {literal(embed(w, tokens))}
'''
        built = builder(TRANSFORMER_EMBEDDING, (8, 8), {"max_len": 10, "dropout": 1.0 if sits else 0.9},
                        {"token.embedding.weight": w})
        if sits:
            return head + "# in train() mode with dropout=1.0: all zeros\nexpected = torch.zeros_like(clean)\n" + (
                built + placement("tokens=tokens", "tokens", "TransformerEmbedding", 1e-4, "clean"))
        return head + "expected = clean\n" + built + dropout_main("tokens=tokens", "tokens", "TransformerEmbedding",
                                                                  1e-4)
    return body


BLOCKS1_RECIPES = {
    "layer_norm_rows_are_normalised": Recipe(("x",), _rows_normalised),
    "layer_norm_default_eps_is_the_contracts": Recipe(("x", "d_model"), _default_eps),
    "layer_norm_applies_gamma_and_beta_per_feature": Recipe(("x", "gamma", "beta"), _gamma_beta),
    "layer_norm_gradients_match_torch": Recipe(("x", "eps"), _gradients),
    "feed_forward_dropout_is_inactive_in_eval": Recipe(("x", "d_ff"), _ff_dropout_eval),
    "feed_forward_dropout_sits_where_the_docstring_says": Recipe(("x", "d_ff", "linear2_bias"), _ff_placement),
    "feed_forward_treats_positions_independently": Recipe(("x", "changed_x", "changed_position"), _ff_positions),
    "positional_encoding_adds_pe_to_input": Recipe(("x",), _pe_adds),
    "positional_encoding_dropout_is_inactive_in_eval": Recipe(("x", "max_len"), _pe_dropout_eval),
    "positional_encoding_dropout_sits_where_the_docstring_says": Recipe(("x", "max_len"), _pe_placement),
    "token_embedding_padding_row_is_zero": Recipe(("tokens", "padding_idx"), _token_padding),
    "transformer_embedding_matches_its_parts": Recipe(("tokens", "d_model"), _te_parts),
    "transformer_embedding_passes_padding_idx_to_its_token_embedding": Recipe(
        ("tokens", "vocab_size", "d_model", "max_len", "padding_idx"), _te_padding),
    "transformer_embedding_dropout_is_inactive_in_eval": Recipe(("tokens",), _te_dropout(2, False)),
    "transformer_embedding_dropout_sits_where_the_docstring_says": Recipe(("tokens",), _te_dropout(5, True)),
    **SDPA_RECIPES,
}

BLOCKS1_WHY_NOT = {
    "positional_encoding_moves_with_to": "its one fixed case, PositionalEncoding(6, max_len=10).to(torch.float64), "
                                         "records no example: the report shows the pe it got",
    **SDPA_WHY_NOT,
}
