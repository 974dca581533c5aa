"""`grade --repro` recipes for the dropout_sits_where_the_docstring_says checks of assignments 2 and 3.

With dropout=1.0 in train() mode nn.Dropout outputs exact zeros whatever its random numbers, so the
output is a fixed function of where dropout sits: PyTorch's own layers, run the same way on the same
weights (drawn again here from the seed each check records), give the expected output."""

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import (
    DECODER,
    DECODER_LAYER,
    ENCODER,
    ENCODER_LAYER,
    MHA,
    RESIDUAL,
    SDPA,
    TRANSFORMER,
    causal,
    decoder_layer_shapes,
    encoder_layer_shapes,
)
from tests.grading.helpers.oracles import (
    attention,
    layer_norm,
    mha_weights,
    torch_decode,
    torch_decoder_layer,
    torch_encode,
    torch_encoder_layer,
    torch_transformer,
)
from tests.grading.helpers.repro_blocks1_sdpa import placement
from tests.grading.helpers.repro_leaks import builder, kit_sublayer_source, stack_parts, values
from tests.grading.helpers.repro_transformer import model_parts


def placement_main(shown: str, call: str, name: str, atol: float) -> str:
    return placement(shown, call, name, atol, None)  # train() mode only: the check has no eval() half


def _residual(ex: dict) -> str:
    x, gamma, beta, nf = ex["x"], ex["gamma"], ex["beta"], ex["norm_first"]
    source, _ = kit_sublayer_source(x.shape[-1], ex["sublayer_seed"])
    expected = x if nf else layer_norm(x, gamma, beta)
    norm = {"norm.gamma": gamma, "norm.beta": beta}
    return values(x=x, gamma=gamma, beta=beta, norm_first=nf) + source + f'''
# with everything dropped: {"x + 0" if nf else "norm(x + 0)"}
expected = {literal(expected)}
''' + builder(RESIDUAL, (x.shape[-1],), {"dropout": 1.0, "norm_first": nf}, norm) + (
        placement_main("x=x, gamma=gamma, beta=beta, norm_first=norm_first", "x, sublayer",
                       f"ResidualConnection (norm_first={nf})", 1e-5))


def _encoder(ex: dict) -> str:
    x, src_mask, nf = ex["x"], ex["src_mask"], ex["norm_first"]
    target, args, w = stack_parts(ex, encoder_layer_shapes, ENCODER_LAYER, ENCODER)
    d, h, f, real = x.shape[-1], ex["n_heads"], ex["d_ff"], src_mask[:, 0, 0, :]
    if target == ENCODER:
        expected = torch_encode(w, x, real, d, h, f, ex["n_layers"], nf, dropout=1.0)
    else:
        expected = torch_encoder_layer(w, "", d, h, f, nf, dropout=1.0)(x, src_key_padding_mask=~real).detach()
    name = target.split(":")[1]
    return values(x=x, src_mask=src_mask, norm_first=nf) + f'''\
# PyTorch's layers on these weights, in train() mode with dropout=1.0
expected = {literal(expected)}
''' + builder(target, args, {"dropout": 1.0, "norm_first": nf}, w) + placement_main(
        "x=x, src_mask=src_mask, norm_first=norm_first", "x, src_mask", f"{name} (norm_first={nf})", 1e-4)


def _decoder(ex: dict) -> str:
    x, memory, src_mask, tgt_mask, nf = (ex[k] for k in ("x", "memory", "src_mask", "tgt_mask", "norm_first"))
    target, args, w = stack_parts(ex, decoder_layer_shapes, DECODER_LAYER, DECODER)
    d, h, f = x.shape[-1], ex["n_heads"], ex["d_ff"]
    src_real, tgt_real = src_mask[:, 0, 0, :], tgt_mask[:, 0, -1, :]  # the causal mask's last row is all True
    if target == DECODER:
        expected = torch_decode(w, x, memory, src_real, tgt_real, d, h, f, ex["n_layers"], nf, dropout=1.0)
    else:
        expected = torch_decoder_layer(w, "", d, h, f, nf, dropout=1.0)(
            x, memory, tgt_mask=~causal(x.shape[1]), tgt_key_padding_mask=~tgt_real,
            memory_key_padding_mask=~src_real).detach()
    name = target.split(":")[1]
    return values(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask, norm_first=nf) + f'''\
# PyTorch's layers on these weights, in train() mode with dropout=1.0
expected = {literal(expected)}
''' + builder(target, args, {"dropout": 1.0, "norm_first": nf}, w) + placement_main(
        "x=x, memory=memory, norm_first=norm_first", "x, memory, src_mask, tgt_mask", f"{name} (norm_first={nf})",
        1e-4)


def _transformer(ex: dict) -> str:
    args, kwargs, w = model_parts(ex)
    src, tgt, nf = ex["src"], ex["tgt"], ex["norm_first"]
    expected = torch_transformer(w, src, tgt, ex["pad_idx"], ex["d_model"], ex["n_heads"], ex["d_ff"], ex["n_layers"],
                                 nf, dropout=1.0)
    return values(src=src, tgt=tgt, pad_idx=ex["pad_idx"], norm_first=nf) + f'''\
# PyTorch's layers on these weights, in train() mode with dropout=1.0
expected = {literal(expected)}
''' + builder(TRANSFORMER, args, {**kwargs, "dropout": 1.0}, w) + placement_main(
        "src=src, tgt=tgt, pad_idx=pad_idx, norm_first=norm_first", "src, tgt", f"Transformer (norm_first={nf})",
        1e-4)


def _mha(ex: dict) -> str:
    q, kv, h = ex["q"], ex["kv"], ex["n_heads"]
    d = q.shape[-1]
    w = mha_weights(d, ex["seed"])
    return values(q=q, kv=kv, n_heads=h) + f'''\
# every head all zeros: w_o's bias at every position
expected = {literal(w["w_o.bias"].expand(q.shape).clone())}
''' + builder(MHA, (d, h), {"dropout": 1.0}, w) + placement_main(
        "q=q, kv=kv, n_heads=n_heads", "q, kv, kv", "MultiHeadAttention", 1e-5)


def _sdpa(ex: dict) -> str:
    q, k, v = ex["q"], ex["k"], ex["v"]
    out, w = attention(q, k, v)
    return values(q=q, k=k, v=v) + f'''\
# attention without dropout, in float64 (what nn.Dropout(1.0) in eval() mode must leave)
clean_out = {literal(out.float())}
clean_weights = {literal(w)}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, v=v)
    resting = sdpa(q, k, v, None, dropout=torch.nn.Dropout(1.0).eval())
    ok = compare("attention output with nn.Dropout(1.0) in eval() mode", resting[0], clean_out, atol=1e-5)
    torch.manual_seed(1)
    out, weights = sdpa(q, k, v, None, dropout=torch.nn.Dropout(1.0).train())
    # every weight dropped: weights @ v is all zeros
    ok &= compare("attention output with nn.Dropout(1.0) in train() mode", out, torch.zeros_like(clean_out),
                  atol=1e-5)
    # the weights returned may be taken before dropout (the clean softmax) or after it (all zeros)
    if not (bool((weights == 0).all()) or torch.allclose(weights.double(), clean_weights, atol=1e-5)):
        print("--- the weights returned are neither all 0 (after dropout) nor the clean softmax (before it)")
        ok = False
    return verdict(ok)
'''


_LAYER = ("norm_first", "n_heads", "d_ff", "seed")
_DECODER = ("x", "memory", "src_mask", "tgt_mask", *_LAYER)
_TRANSFORMER = ("src", "tgt", "pad_idx", "norm_first", "vocab", "seed", "d_model", "n_heads", "n_layers", "d_ff",
                "max_len")
DROPOUT_RECIPES = {
    "residual_dropout_sits_where_the_docstring_says": Recipe(("x", "gamma", "beta", "norm_first", "sublayer_seed"),
                                                             _residual),
    "encoder_layer_dropout_sits_where_the_docstring_says": Recipe(("x", "src_mask", *_LAYER), _encoder),
    "encoder_dropout_sits_where_the_docstring_says": Recipe(("x", "src_mask", "n_layers", *_LAYER), _encoder),
    "decoder_layer_dropout_sits_where_the_docstring_says": Recipe(_DECODER, _decoder),
    "decoder_dropout_sits_where_the_docstring_says": Recipe((*_DECODER, "n_layers"), _decoder),
    "transformer_dropout_sits_where_the_docstring_says": Recipe(_TRANSFORMER, _transformer),
    "mha_dropout_sits_where_the_docstring_says": Recipe(("q", "kv", "n_heads", "seed"), _mha),
    "sdpa_dropout_sits_where_the_docstring_says": Recipe(("q", "k", "v"), _sdpa),
}
