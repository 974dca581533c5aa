"""`grade --repro` recipes for assignment 3's layers and stacks (tests/grading/public/repro.py lists them).

Each check draws its weights with random_state(shapes, seed) and records the seed (and the sizes its
example does not show) with its example (grader.suite.example.carrying): the weights are drawn again
here, the same, and PyTorch's own layers given them compute the expected output, which the script
carries as numbers."""

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import (
    DECODER,
    DECODER_LAYER,
    ENCODER,
    ENCODER_LAYER,
    causal,
    decoder_layer_shapes,
    encoder_layer_shapes,
    random_state,
    stack_shapes,
)
from tests.grading.helpers.oracles import torch_decode, torch_decoder_layer, torch_encode, torch_encoder_layer


def module_script(target: str, built: tuple[tuple, dict], state: dict, inputs: dict, expected, name: str) -> str:
    """The body of a script that builds `target` as built = (args, kwargs), gives it `state` by name (in
    eval mode), runs it on `inputs` (in order) and compares with `expected` (atol 1e-4, as the checks)."""
    args, kwargs = built
    written = "".join(f"{key} = {literal(value)}\n" for key, value in inputs.items())
    return f'''
{written}# the weights the check gave your module, by the contract's names
state = {literal(state)}
# PyTorch's own layers given these weights, on these inputs
expected = {literal(expected)}


def main() -> int:
    made = load("{target}")
    module = made(*{literal(args)}, **{literal(kwargs)})
    if not give(module, state):
        return 1
    show({", ".join(f"{key}={key}" for key in inputs)})
    return verdict(compare("{name}", module({", ".join(inputs)}), expected, atol=1e-4))
'''


def _sizes(ex: dict) -> tuple[int, int, int, bool]:
    return ex["x"].shape[-1], ex["n_heads"], ex["d_ff"], ex["norm_first"]


def _encoder_layer(ex: dict) -> str:
    (d, h, f, nf), x, src_mask = _sizes(ex), ex["x"], ex["src_mask"]
    w = random_state(encoder_layer_shapes(d, f), ex["seed"])
    expected = torch_encoder_layer(w, "", d, h, f, nf)(x, src_key_padding_mask=~src_mask[:, 0, 0, :]).detach()
    return module_script(ENCODER_LAYER, ((d, h, f), {"dropout": 0.0, "norm_first": nf}), w,
                         {"x": x, "src_mask": src_mask}, expected, f"EncoderLayer output (norm_first={nf})")


def _encoder(ex: dict) -> str:
    (d, h, f, nf), n, x, src_mask = _sizes(ex), ex["n_layers"], ex["x"], ex["src_mask"]
    w = random_state(stack_shapes(encoder_layer_shapes, n, d, f), ex["seed"])
    expected = torch_encode(w, x, src_mask[:, 0, 0, :], d, h, f, n, nf)
    return module_script(ENCODER, ((n, d, h, f), {"dropout": 0.0, "norm_first": nf}), w,
                         {"x": x, "src_mask": src_mask}, expected, f"Encoder output (norm_first={nf})")


def _decoder_inputs(ex: dict) -> tuple[dict, object, object]:
    """The decoder's inputs, and src_real and tgt_real, read off the masks (the causal mask's last row
    is all True: tgt_mask's last row is tgt_real)."""
    inputs = {"x": ex["x"], "memory": ex["memory"], "src_mask": ex["src_mask"], "tgt_mask": ex["tgt_mask"]}
    return inputs, ex["src_mask"][:, 0, 0, :], ex["tgt_mask"][:, 0, -1, :]


def _decoder_layer(ex: dict) -> str:
    (d, h, f, nf), (inputs, src_real, tgt_real) = _sizes(ex), _decoder_inputs(ex)
    w = random_state(decoder_layer_shapes(d, f), ex["seed"])
    x, memory = inputs["x"], inputs["memory"]
    expected = torch_decoder_layer(w, "", d, h, f, nf)(
        x, memory, tgt_mask=~causal(x.shape[1]), tgt_key_padding_mask=~tgt_real,
        memory_key_padding_mask=~src_real).detach()
    return module_script(DECODER_LAYER, ((d, h, f), {"dropout": 0.0, "norm_first": nf}), w, inputs, expected,
                         f"DecoderLayer output (norm_first={nf})")


def _decoder(ex: dict) -> str:
    (d, h, f, nf), n, (inputs, src_real, tgt_real) = _sizes(ex), ex["n_layers"], _decoder_inputs(ex)
    w = random_state(stack_shapes(decoder_layer_shapes, n, d, f), ex["seed"])
    expected = torch_decode(w, inputs["x"], inputs["memory"], src_real, tgt_real, d, h, f, n, nf)
    return module_script(DECODER, ((n, d, h, f), {"dropout": 0.0, "norm_first": nf}), w, inputs, expected,
                         f"Decoder output (norm_first={nf})")


_SIZES = ("x", "n_heads", "d_ff", "norm_first", "seed")
LAYER_RECIPES = {
    "encoder_layer_matches_torch": Recipe((*_SIZES, "src_mask"), _encoder_layer),
    "encoder_matches_torch": Recipe((*_SIZES, "src_mask", "n_layers"), _encoder),
    "decoder_layer_matches_torch": Recipe((*_SIZES, "memory", "src_mask", "tgt_mask"), _decoder_layer),
    "decoder_matches_torch": Recipe((*_SIZES, "memory", "src_mask", "tgt_mask", "n_layers"), _decoder),
}
