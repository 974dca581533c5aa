"""`grade --repro` recipes for assignment 3's residual, layer and stack checks that module_script
(repro_layers.py) does not cover: the residual's formula, the final norm, dropout in eval() mode, and
the leak checks, which compare the module's outputs with each other (run it, change the padded or
future positions, run it again) rather than with PyTorch's.

The checks record, with their example (grader.suite.example.carrying), what the example's text does
not show: the seed the weights were drawn from, the sizes, the changed inputs. The weights are drawn
again here, the same, and written into the script by the contract's names."""

import torch
import torch.nn.functional as F

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.checks import sublayer_weights
from tests.grading.helpers.names import (
    DECODER,
    DECODER_LAYER,
    ENCODER,
    ENCODER_LAYER,
    RESIDUAL,
    causal,
    decoder_layer_shapes,
    encoder_layer_shapes,
    random_state,
    stack_shapes,
)
from tests.grading.helpers.oracles import (
    layer_norm,
    torch_decode,
    torch_decoder_layer,
    torch_encode,
    torch_encoder_layer,
)
from tests.grading.helpers.repro_layers import module_script

BASIS = "compared with your own output before the change"


def values(**named) -> str:
    """`name = literal` lines, in order."""
    return "".join(f"{name} = {literal(value)}\n" for name, value in named.items())


def builder(target: str, args: tuple, kwargs: dict, state: dict) -> str:
    """build(): `target` built as (args, kwargs), given `state` by name (empty: as built), in eval mode."""
    return f'''
# the weights the check gave your module, by the contract's names (none: as your constructor makes them)
state = {literal(state)}


def build():
    """Your module, built as the check builds it and in eval mode (None: it lacks a name of `state`)."""
    made = load("{target}")
    module = made(*{literal(args)}, **{literal(kwargs)})
    return module if give(module, state) else None
'''


def invariance(shown: str, before: str, same: tuple[str, str, str], moved: tuple[str, str, str], atol: float) -> str:
    """main(): `before` (an expression of `module`) must be a tensor; same = (what, got, want): `got` must equal
    `want` (the module's own output before the change) within atol; moved = (what, a, b): `a` must differ
    from `b` (the module does not just ignore its input)."""
    return f'''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show({shown})
    before = {before}
    if not isinstance(before, torch.Tensor):
        print(f"the output should be a tensor, got {{type(before).__name__}}")
        return 1
    before = before.detach()
    ok = compare("{same[0]} ({BASIS})", {same[1]}, {same[2]}, atol={atol!r})
    moved, kept = {moved[1]}, {moved[2]}
    if not (isinstance(moved, torch.Tensor) and moved.shape == kept.shape) or torch.allclose(
            moved.detach(), kept, atol=1e-6):
        print("--- {moved[0]} did not change: it should")
        ok = False
    return verdict(ok)
'''


def dropout_main(shown: str, call: str, name: str, atol: float) -> str:
    """main() of a dropout-in-eval check: the module built with dropout=0.9 gives `expected` in eval() mode,
    and something else in train() mode."""
    return f'''

def main() -> int:
    module = build()  # built with dropout=0.9
    if module is None:
        return 1
    show({shown})
    ok = compare("{name} output in eval() mode with dropout=0.9", module.eval()({call}), expected, atol={atol!r})
    torch.manual_seed(1)
    trained = module.train()({call})
    if not (isinstance(trained, torch.Tensor) and trained.shape == expected.shape) or torch.allclose(
            trained.detach(), expected, atol=1e-6):
        print("--- the output in train() mode with dropout=0.9 is the eval() output: it should differ")
        ok = False
    return verdict(ok)
'''


def kit_sublayer_source(d: int, seed: int) -> tuple[str, object]:
    """The kit's sublayer as script source, and the same function here."""
    w, b = sublayer_weights(d, seed)
    source = f'''# the check's sublayer, tanh(linear(x)), with these weights (drawn from seed {seed})
sublayer_weight = {literal(w)}
sublayer_bias = {literal(b)}


def sublayer(x):
    return torch.tanh(torch.nn.functional.linear(x, sublayer_weight, sublayer_bias))
'''
    return source, lambda x: torch.tanh(F.linear(x, w, b))


def _residual(ex: dict) -> str:
    x, gamma, beta, nf = ex["x"], ex["gamma"], ex["beta"], ex["norm_first"]
    source, sub = kit_sublayer_source(x.shape[-1], ex["sublayer_seed"])
    expected = x + sub(layer_norm(x, gamma, beta)) if nf else layer_norm(x + sub(x), gamma, beta)
    formula = "x + sublayer(norm(x))" if nf else "norm(x + sublayer(x))"
    norm = {"norm.gamma": gamma, "norm.beta": beta}
    return values(x=x, gamma=gamma, beta=beta, norm_first=nf) + source + f'''
# {formula}, norm = LayerNorm with gamma and beta
expected = {literal(expected)}
''' + builder(RESIDUAL, (x.shape[-1],), {"dropout": 0.0, "norm_first": nf}, norm) + f'''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(x=x, gamma=gamma, beta=beta, norm_first=norm_first)
    return verdict(compare("ResidualConnection output (norm_first={nf})", module(x, sublayer), expected, atol=1e-5))
'''


def _residual_dropout(ex: dict) -> str:
    x, nf = ex["x"], ex["norm_first"]
    source, sub = kit_sublayer_source(x.shape[-1], ex["sublayer_seed"])
    expected = x + sub(layer_norm(x)) if nf else layer_norm(x + sub(x))
    formula = "x + sublayer(norm(x))" if nf else "norm(x + sublayer(x))"
    return values(x=x, norm_first=nf) + source + f'''
# without dropout: {formula}, norm as built (gamma 1, beta 0)
expected = {literal(expected)}
''' + builder(RESIDUAL, (x.shape[-1],), {"dropout": 0.9, "norm_first": nf}, {}) + dropout_main(
        "x=x, norm_first=norm_first", "x, sublayer", f"ResidualConnection (norm_first={nf})", 1e-5)


def _encoder_layer_dropout(ex: dict) -> str:
    x, src_mask, h, f = ex["x"], ex["src_mask"], ex["n_heads"], ex["d_ff"]
    d = x.shape[-1]
    w = random_state(encoder_layer_shapes(d, f), ex["seed"])
    expected = torch_encoder_layer(w, "", d, h, f, False)(x, src_key_padding_mask=~src_mask[:, 0, 0, :]).detach()
    return values(x=x, src_mask=src_mask) + f'''\
# nn.TransformerEncoderLayer (post-norm, as built) on these weights, without dropout
expected = {literal(expected)}
''' + builder(ENCODER_LAYER, (d, h, f), {"dropout": 0.9}, w) + dropout_main(
        "x=x, src_mask=src_mask", "x, src_mask", "EncoderLayer", 1e-4)


def _decoder_layer_dropout(ex: dict) -> str:
    x, memory, src_mask, tgt_mask, h, f = (ex[k] for k in ("x", "memory", "src_mask", "tgt_mask", "n_heads", "d_ff"))
    d = x.shape[-1]
    w = random_state(decoder_layer_shapes(d, f), ex["seed"])
    expected = torch_decoder_layer(w, "", d, h, f, False)(
        x, memory, tgt_mask=~causal(x.shape[1]), memory_key_padding_mask=~src_mask[:, 0, 0, :]).detach()
    return values(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask) + f'''\
# nn.TransformerDecoderLayer (post-norm, as built) on these weights, without dropout
expected = {literal(expected)}
''' + builder(DECODER_LAYER, (d, h, f), {"dropout": 0.9}, w) + dropout_main(
        "x=x, memory=memory", "x, memory, src_mask, tgt_mask", "DecoderLayer", 1e-4)


def stack_parts(ex: dict, layer_shapes, layer: str, stack: str) -> tuple[str, tuple, dict]:
    """(target, args, state) of the layer, or of the stack where the example has n_layers."""
    d, f = ex["x"].shape[-1], ex["d_ff"]
    if "n_layers" in ex:
        n = ex["n_layers"]
        return stack, (n, d, ex["n_heads"], f), random_state(stack_shapes(layer_shapes, n, d, f), ex["seed"])
    return layer, (d, ex["n_heads"], f), random_state(layer_shapes(d, f), ex["seed"])


def _padding(ex: dict) -> str:
    x, src_mask, longer, changed = ex["x"], ex["src_mask"], ex["longer"], ex["changed"]
    extra, S = longer.shape[1] - x.shape[1], x.shape[1]
    longer_mask = torch.cat([src_mask, torch.zeros(x.shape[0], 1, 1, extra, dtype=torch.bool)], dim=-1)
    target, args, state = stack_parts(ex, encoder_layer_shapes, ENCODER_LAYER, ENCODER)
    name = target.split(":")[1]
    return values(x=x, src_mask=src_mask) + f'''\
# x with {extra} padded positions appended (blocked by the mask): the outputs at the first {S} must not change
longer = {literal(longer)}
longer_mask = {literal(longer_mask)}
# x with position 0 (real in every row) changed: the output must change
changed = {literal(changed)}
''' + builder(target, args, {"dropout": 0.0, "norm_first": ex["norm_first"]}, state) + invariance(
        "x=x, src_mask=src_mask, padding_appended=longer.shape[1] - x.shape[1]", "module(x, src_mask)",
        (f"{name} outputs at the original positions with padding appended", f"module(longer, longer_mask)[:, :{S}]",
         "before"), ("the output when a real position changes", "module(changed, src_mask)", "before"), 1e-4)


def _future(ex: dict) -> str:
    x, memory, src_mask, tgt_mask, changed, t = (
        ex[k] for k in ("x", "memory", "src_mask", "tgt_mask", "changed", "changed_from_position"))
    target, args, state = stack_parts(ex, decoder_layer_shapes, DECODER_LAYER, DECODER)
    after = "module(changed, memory, src_mask, tgt_mask)"
    return values(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask) + f'''\
# x changed from position {t} on: the outputs before it must not change (a causal mask keeps them)
changed = {literal(changed)}
''' + builder(target, args, {"dropout": 0.0}, state) + invariance(
        f"x=x, memory=memory, tgt_mask=tgt_mask, changed_from_position={t}", "module(x, memory, src_mask, tgt_mask)",
        (f"outputs at positions 0..{t - 1}", f"{after}[:, :{t}]", f"before[:, :{t}]"),
        ("the outputs at the changed positions", f"{after}[:, {t}:]", f"before[:, {t}:]"), 1e-5)


def _memory(ex: dict) -> str:
    x, memory, src_mask, tgt_mask, longer, changed = (
        ex[k] for k in ("x", "memory", "src_mask", "tgt_mask", "longer_memory", "changed_memory"))
    extra = longer.shape[1] - memory.shape[1]
    longer_mask = torch.cat([src_mask, torch.zeros(x.shape[0], 1, 1, extra, dtype=torch.bool)], dim=-1)
    target, args, state = stack_parts(ex, decoder_layer_shapes, DECODER_LAYER, DECODER)
    return values(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask) + f'''\
# the memory with {extra} padded positions appended (blocked by longer_mask): the output must not change
longer_memory = {literal(longer)}
longer_mask = {literal(longer_mask)}
# the memory with position 0 (real in every row) changed: the output must change
changed_memory = {literal(changed)}
''' + builder(target, args, {"dropout": 0.0}, state) + invariance(
        "x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask", "module(x, memory, src_mask, tgt_mask)",
        ("output with padding appended to the memory", "module(x, longer_memory, longer_mask, tgt_mask)", "before"),
        ("the output when the memory changes", "module(x, changed_memory, src_mask, tgt_mask)", "before"), 1e-4)


def _final_norm(ex: dict) -> str:
    nf = ex["norm_first"]
    decoder = "memory" in ex
    parts = ((decoder_layer_shapes, DECODER_LAYER, DECODER) if decoder
             else (encoder_layer_shapes, ENCODER_LAYER, ENCODER))
    target, args, state = stack_parts(ex, *parts)
    d, h, f, n = ex["x"].shape[-1], ex["n_heads"], ex["d_ff"], ex["n_layers"]
    state["norm.gamma"], state["norm.beta"] = torch.full((d,), 3.0), torch.full((d,), 5.0)
    if decoder:
        inputs = {k: ex[k] for k in ("x", "memory", "src_mask", "tgt_mask")}
        expected = torch_decode(state, ex["x"], ex["memory"], ex["src_mask"][:, 0, 0, :], ex["tgt_mask"][:, 0, -1, :],
                                d, h, f, n, nf)
    else:
        inputs = {"x": ex["x"], "src_mask": ex["src_mask"]}
        expected = torch_encode(state, ex["x"], ex["src_mask"][:, 0, 0, :], d, h, f, n, nf)
    name = target.split(":")[1]
    return module_script(target, (args, {"dropout": 0.0, "norm_first": nf}), state, inputs, expected,
                         f"{name} output (norm_first={nf}, norm.gamma=3, norm.beta=5)")


_LAYER = ("n_heads", "d_ff", "seed")
LEAK_RECIPES = {
    "residual_post_norm_matches_formula": Recipe(("x", "gamma", "beta", "norm_first", "sublayer_seed"), _residual),
    "residual_pre_norm_matches_formula": Recipe(("x", "gamma", "beta", "norm_first", "sublayer_seed"), _residual),
    "residual_dropout_is_inactive_in_eval": Recipe(("x", "norm_first", "sublayer_seed"), _residual_dropout),
    "encoder_layer_dropout_is_inactive_in_eval": Recipe(("x", "src_mask", *_LAYER), _encoder_layer_dropout),
    "decoder_layer_dropout_is_inactive_in_eval": Recipe(("x", "memory", "src_mask", "tgt_mask", *_LAYER),
                                                        _decoder_layer_dropout),
    "encoder_layer_source_padding_does_not_leak": Recipe(
        ("x", "src_mask", "longer", "changed", "norm_first", *_LAYER), _padding),
    "encoder_source_padding_does_not_leak": Recipe(
        ("x", "src_mask", "longer", "changed", "norm_first", "n_layers", *_LAYER), _padding),
    "decoder_layer_does_not_leak_the_future": Recipe(
        ("x", "memory", "src_mask", "tgt_mask", "changed", "changed_from_position", *_LAYER), _future),
    "decoder_does_not_leak_the_future": Recipe(
        ("x", "memory", "src_mask", "tgt_mask", "changed", "changed_from_position", "n_layers", *_LAYER), _future),
    "decoder_layer_attends_to_the_memory": Recipe(
        ("x", "memory", "src_mask", "tgt_mask", "longer_memory", "changed_memory", *_LAYER), _memory),
    "encoder_final_norm_only_with_norm_first": Recipe(("x", "src_mask", "norm_first", "n_layers", *_LAYER),
                                                      _final_norm),
    "decoder_final_norm_only_with_norm_first": Recipe(
        ("x", "memory", "src_mask", "tgt_mask", "norm_first", "n_layers", *_LAYER), _final_norm),
}
