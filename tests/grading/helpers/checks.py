"""Generic checks that many components share: names and shapes, gradients, dropout, changed outputs.

Each raises grader.suite.checks.Mismatch with what was expected, what came back, and the likely
causes; a test calls one of them with its component's module, inputs and expected values.
"""

import math

import torch

from grader.findings import Parameters
from grader.suite.checks import Compare, Found, Mismatch, assert_close, describe, expect_tensor
from grader.suite.example import Example, carrying
from tests import strategies as s
from tests.grading.helpers.names import TRANSFORMER

NORM_HINT = {False: "post-norm (norm_first=False): x = norm(x + dropout(sublayer(x))) in each residual.",
             True: "pre-norm (norm_first=True): x = x + dropout(sublayer(norm(x))) in each residual."}

# what an invariance check compares with: the submission's own output, not a correct implementation's
BEFORE = "your own output before the change (the change must leave it as it was)"


# names and shapes --------------------------------------------------------------------------

# a few of them: with the hint and what is missing, eight pushed the panel past one screen
def _listing(shapes: dict, limit: int = 4) -> str:
    items = [f"{n} {s}" for n, s in sorted(shapes.items())]
    return ", ".join(items[:limit]) + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _shared(missing: list[str], got: set[str]) -> str:
    """Where a submodule lists none of its parameters while another lists the same names: one module
    object assigned to both attributes (torch lists a shared module's parameters once, under the first)."""
    prefixes = {n.split(".", 1)[0] for n in missing if "." in n}
    for p in sorted(prefixes):
        suffixes = {n.split(".", 1)[1] for n in missing if n.startswith(p + ".")}
        if any(n.startswith(p + ".") for n in got):
            continue
        twin = sorted(q for q in {n.split(".", 1)[0] for n in got if "." in n}
                      if all(f"{q}.{x}" in got for x in suffixes))
        if twin:
            return (f"{p} lists none of its parameters while {twin[0]} lists the same names: {p} and {twin[0]} look "
                    f"like one module assigned to both attributes (torch lists a shared module's parameters once, "
                    f"under the first name), where the docstring asks for a module of its own for each.")
    return ""


def expect_names(module, component: str, parameters: dict, buffers: dict | None = None, example: str = ""):
    """The module's parameters are exactly these names and shapes; it has these buffers (name -> shape)."""
    got = {n: shape for n, (shape, _, _) in module.parameters().items()}
    if got != parameters:
        missing = sorted(set(parameters) - set(got))
        extra = sorted(set(got) - set(parameters))
        reshaped = [n for n in sorted(set(got) & set(parameters)) if got[n] != parameters[n]]
        wrong = [f"{n} {got[n]} (expected {parameters[n]})" for n in reshaped]
        raise Mismatch(f"{component}'s parameters have the wrong names or shapes",
                       expected=_listing(parameters),
                       got=f"missing: {', '.join(missing[:6]) or 'none'}; unexpected: {', '.join(extra[:6]) or 'none'}"
                           f"; wrong shape: {', '.join(wrong[:4]) or 'none'}",
                       # the same names as data, as many as `got` shows: what the diagnosis reads
                       found=Found(parameters=Parameters(missing=tuple(missing[:6]), unexpected=tuple(extra[:6]),
                                                         wrong_shape=tuple(reshaped[:4]))),
                       example=example,
                       hint=_shared(missing, set(got)) or
                            "The grader copies weights by name, and these names or shapes differ from the "
                            "docstring's. Likely causes: a layer stored under another attribute name, in/out features "
                            "swapped, a fused layer instead of separate ones, or stacked layers that repeat one "
                            "instance (they then share, and list, one set of parameters).")
    have = module.buffers() if buffers else {}
    for name, shape in (buffers or {}).items():
        if name not in have or have[name][0] != shape:
            raise Mismatch(f"{component} should register a buffer {name} of shape {shape}",
                           expected=f"buffer {name} {shape}",
                           got=", ".join(f"buffer {n} {b[0]}" for n, b in have.items()) or "no buffers",
                           example=example,
                           hint=f"No buffer {name} of that shape was found. Likely causes: the table is a plain "
                                "attribute or an nn.Parameter instead of self.register_buffer(name, tensor), or "
                                "its shape is transposed.")


# outputs that must change ------------------------------------------------------------------

def perturb(x: torch.Tensor, index, seed: int, scale: float = 1.0) -> torch.Tensor:
    """A copy of `x` with `x[index]` moved by a random vector, not a constant: a constant shift of a whole
    feature vector is invisible after a LayerNorm, so a correct model could ignore it."""
    changed = x.clone()
    changed[index] += s.tensor(changed[index].shape, seed, scale)
    return changed


def expect_changed(before, after, *, name: str, example: str = "", hint: str = ""):
    """`after` must differ from `before` somewhere (by more than float32 rounding)."""
    after = expect_tensor(after, name=name, shape=before.shape, example=example)
    if torch.allclose(before, after, atol=1e-6):
        raise Mismatch(f"{name} should change", expected="a different output", got="the same output",
                       example=example, hint=hint)


# gradients ---------------------------------------------------------------------------------

def gradient_free(name: str) -> bool:
    """Parameters that get no gradient in any correct implementation: a key bias shifts every score of a
    row by the same amount, and softmax ignores that."""
    return name.endswith("w_k.bias")


def expect_gradients(module, grads, *, component: str, skip=(), example: str = ""):
    """Every parameter of the submission's module (except the gradient-free ones and names starting with
    a prefix in `skip`) gets a finite gradient that is not all zeros."""
    names = sorted(module.parameters())
    if not names:
        raise Mismatch(f"{component} has no parameters", expected="the parameters named in the docstring",
                       got="no parameters", example=example,
                       hint="Likely causes: layers kept in a plain list or dict (use nn.ModuleList) or created in "
                            "forward instead of __init__.")
    grads = grads or {}
    for name in names:
        if gradient_free(name) or any(name.startswith(p) for p in skip):
            continue
        g = grads.get(name)
        if type(g) is torch.Tensor and bool(torch.isfinite(g).all()) and bool((g != 0).any()):
            continue
        seen = "no gradient (None)" if g is None else "non-finite values" if type(g) is torch.Tensor and not bool(
            torch.isfinite(g).all()) else "all zeros"
        raise Mismatch(f"the gradient of {component}'s parameter {name} is {seen}",
                       expected="a finite gradient that is not all zeros", got=seen, example=example,
                       # as data for the diagnosis (grader.judging.diagnosis): no gradient at all is a
                       # parameter the output never reached
                       found=Found(parameters=Parameters(no_gradient=(name,))) if g is None else Found(),
                       hint=f"After backward of a random function of the output, {name} got {seen}. Likely causes: "
                            f"{name} is not used in forward, the output is cut from it (.detach(), .data, .item(), "
                            "torch.no_grad()), or a dropout/mask zeroes everything that flows through it.")


# dropout -----------------------------------------------------------------------------------

def check_dropout_inactive_in_eval(module, inputs: tuple, expected: torch.Tensor, *, component: str,
                                   uses: str, example: str = "", atol: float = 1e-5):
    """`module` was built with dropout=0.9. In eval() mode it gives `expected` (the output without dropout);
    in train() mode it gives something else. `uses` says where the docstring applies dropout."""
    assert_close(module.eval()(*inputs), expected, name=f"{component} output in eval() mode with dropout=0.9",
                 example=example, compare=Compare(atol=atol),
                 hint="In eval() mode dropout does nothing, so this should equal the output without dropout, and it "
                      "differs. Likely causes: dropout applied with F.dropout(..., training=True) or by hand instead "
                      "of through nn.Dropout modules, or an error unrelated to dropout (see the other checks).")
    trained = expect_tensor(module.train().run(None, inputs, seed=1), name=f"{component} output in train() mode",
                            shape=expected.shape, example=example)
    expect_changed(expected, trained, name=f"the {component} output in train() mode with dropout=0.9",
                   example=example,
                   hint="In train() mode with dropout=0.9 the output equals the eval() output. Likely causes: the "
                        f"dropout argument is ignored or not passed on; the docstring applies it {uses}.")


def check_dropout_placement(module, inputs: tuple, expected: torch.Tensor, *, component: str, placement: str,
                            causes: str, example: str = "", atol: float = 1e-5,
                            in_eval: torch.Tensor | None = None):
    """`module` was built with dropout=1.0. In train() mode nn.Dropout(1.0) outputs exact zeros whatever the
    random numbers, so the output is a fixed function of where dropout sits: it must be `expected`.

    Where that is all zeros, `in_eval` (the output in eval() mode) is required too, so that a module
    that always returns zeros does not pass."""
    if in_eval is not None:
        assert_close(module.eval()(*inputs), in_eval, name=f"{component} output in eval() mode with dropout=1.0",
                     example=example, compare=Compare(atol=atol),
                     hint="In eval() mode dropout does nothing, so this should equal the output without dropout, "
                          "and it differs. Likely causes: an error unrelated to dropout (see the other checks).")
    got = module.train().run(None, inputs, seed=1)
    # the example's values (what --repro reads) kept under the longer text
    shown = Example(f"{example}\ndropout = 1.0, train() mode", getattr(example, "values", {}))
    assert_close(got, expected, name=f"{component} output in train() mode with dropout=1.0",
                 example=shown, compare=Compare(atol=atol),
                 hint="With dropout=1.0 in train() mode every dropped value is exactly 0, so the output shows where "
                      f"dropout sits: with the docstring's placement it is {placement}, and yours differs. "
                      f"Likely causes: {causes}")


# the kit's sublayer ------------------------------------------------------------------------

def sublayer_weights(d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The kit sublayer's (W, b), drawn from `seed` (--repro draws them again from the seed a check records)."""
    return s.tensor([d, d], seed, 0.7), s.tensor([d], seed + 1, 0.5)


def kit_sublayer(student, d: int, seed: int):
    """(the sublayer in the submission's process, the same function here): x -> tanh(x W^T + b)."""
    w, b = sublayer_weights(d, seed)
    return student.call("kit:linear_sublayer", w, b), (lambda x: torch.tanh(torch.nn.functional.linear(x, w, b)))


# the Transformer's initialisation ------------------------------------------------------------

def check_xavier(student):
    """Every parameter with more than one dimension looks like a xavier_uniform_ draw."""
    example = describe(src_vocab_size=30, tgt_vocab_size=25, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    m = student.new(TRANSFORMER, 30, 25, d_model=16, n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=16,
                    pad_idx=0)
    state, params = m.state(), m.parameters()
    for name, (shape, _, _) in sorted(params.items()):
        if len(shape) < 2:
            continue
        p = state[name].double()
        fan_in, fan_out = shape[1], shape[0]
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        std, top = float(p.std()), float(p.abs().max())
        uniform_std = bound / math.sqrt(3)
        ok = 0.8 * bound <= top <= bound * (1 + 1e-5) and 0.8 * uniform_std <= std <= 1.2 * uniform_std
        if not ok:
            raise Mismatch(f"{name} does not look Xavier-uniform initialised",
                           expected=f"values in [-{bound:.4g}, {bound:.4g}] (xavier_uniform_ for shape {shape}), "
                                    f"std about {bound / math.sqrt(3):.4g}",
                           got=f"max |value| {top:.4g}, std {std:.4g}", example=example,
                           hint="The spread of these values differs from a xavier_uniform_ draw. Likely causes: the "
                                "init is not applied to every parameter with more than one dimension (embedding "
                                "tables included), it runs before some parts are built, or another init runs after it.")


def check_padding_rows(student):
    """Both embedding tables have a zero row at pad_idx, and only there."""
    for pad in (0, 3):
        sizes = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 16}
        # the sizes the text leaves out travel as data (--repro builds the same Transformer)
        example = carrying(describe(src_vocab_size=9, tgt_vocab_size=7, d_model=8, pad_idx=pad), **sizes)
        state = student.new(TRANSFORMER, 9, 7, **sizes, pad_idx=pad).state()
        for name in ("src_embed.token.embedding.weight", "tgt_embed.token.embedding.weight"):
            table = expect_tensor(state.get(name), name=name, dtype=torch.float32, example=example,
                                  hint="No such table in the Transformer's state. Likely causes: the embeddings are "
                                       "not TransformerEmbedding modules named src_embed and tgt_embed.")
            assert_close(table[pad], torch.zeros(table.shape[1]), name=f"row {pad} (pad_idx) of {name}",
                         compare=Compare(atol=0, rtol=0),
                         example=example,
                         hint="The padding row is not zero. Likely causes: Xavier init overwrote it and it was not "
                              "zeroed again afterwards (under torch.no_grad()), or padding_idx was not passed on.")
            others = torch.cat([table[:pad], table[pad + 1:]])
            if bool((others.abs().sum(-1) == 0).any()):
                raise Mismatch(f"only the padding row of {name} should be zero", expected="non-zero rows elsewhere",
                               got="a zero row for a real token", example=example,
                               hint="A row other than pad_idx is all zeros. Likely causes: zeroing a row other "
                                    "than pad_idx, or zeroing by a wrong index.")
