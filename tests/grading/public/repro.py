"""How `grade --repro` writes this course's checks as scripts (grader/interactive/repro/discover.py
reads RECIPES, STORED and WHY_NOT here): each recipe turns a failing example's values (the check's
data, as it recorded them) into the script's body, the expected values computed here by torch and
written as numbers. Ships with the public tier: a student's `grade --repro` runs it."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import LOSS, NOAM, PAD_MASK, SDPA, TGT_MASK, causal
from tests.grading.helpers.oracles import attention, graded_rows
from tests.grading.helpers.repro_attention import ATTENTION_RECIPES
from tests.grading.helpers.repro_blocks import BLOCK_RECIPES
from tests.grading.helpers.repro_blocks1 import BLOCKS1_RECIPES, BLOCKS1_WHY_NOT
from tests.grading.helpers.repro_data import DATA_RECIPES, DATA_WHY_NOT
from tests.grading.helpers.repro_layers import LAYER_RECIPES
from tests.grading.helpers.repro_mha import MHA_RECIPES
from tests.grading.helpers.repro_stacks import STACK_RECIPES, STACK_WHY_NOT


def _sdpa_matches_torch(ex: dict) -> str:
    q, k, v, mask = ex["q"], ex["k"], ex["v"], ex["mask"]
    _, w = attention(q, k, k, mask)
    out = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    rows = graded_rows(mask, w.shape)
    return f'''
q = {literal(q)}
k = {literal(k)}
v = {literal(v)}
mask = {literal(mask)}  # True = may attend
# what torch computes in float64 (F.scaled_dot_product_attention for out), rounded to float32
expected_out = {literal(out.float())}
expected_weights = {literal(w.float())}
# rows whose keys are all blocked are not graded
graded = {literal(rows)}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, v=v, mask=mask)
    got = sdpa(q, k, v, mask)
    if not (isinstance(got, tuple) and len(got) == 2):
        print(f"expected a pair (out, weights), got {{type(got).__name__}}")
        return 1
    out, weights = got
    ok = compare("attention weights", weights, expected_weights, atol=1e-5,
                 where=graded[..., None].expand(expected_weights.shape))
    ok &= compare("attention output", out, expected_out, atol=1e-5, where=graded[..., None].expand(expected_out.shape))
    return verdict(ok)
'''


def _sdpa_rows_sum_to_one(ex: dict) -> str:
    q, k, mask = ex["q"], ex["k"], ex["mask"]
    _, w = attention(q, k, k, mask)
    rows = graded_rows(mask, w.shape)
    best = w.nan_to_num(-1.0).argmax(-1)
    v = torch.ones(*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), k.shape[-2], 1)
    return f'''
q = {literal(q)}
k = {literal(k)}
mask = {literal(mask)}  # True = may attend
# v is not part of the check's example: the weights must not depend on it, so any v of this shape will do
v = {literal(v)}
# rows whose keys are all blocked are not graded
graded = {literal(rows)}
# in each graded row, the key with the highest score (q @ k^T / sqrt(d_k)), which must get the largest weight
best_key = {literal(best)}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, mask=mask)
    got = sdpa(q, k, v, mask)
    if not (isinstance(got, tuple) and len(got) == 2):
        print(f"expected a pair (out, weights), got {{type(got).__name__}}")
        return 1
    weights = got[1]
    if not isinstance(weights, torch.Tensor) or weights.shape != best_key.shape + (k.shape[-2],):
        print(f"weights should be a tensor of shape {{tuple(best_key.shape) + (k.shape[-2],)}}, got {{weights!r}}")
        return 1
    print("weights:", weights.detach(), sep="\\n")
    sums = weights.detach().double().sum(-1)
    ok = compare("sum of each row of weights", sums, torch.ones_like(sums), atol=1e-5, where=graded)
    if bool((weights < 0).any()):
        print(f"--- a weight is negative: {{float(weights.min()):.6g}}")
        ok = False
    ok &= compare("weight of the best-scoring key (the row's largest weight)",
                  weights.gather(-1, best_key[..., None])[..., 0], weights.max(-1).values, atol=1e-6, where=graded)
    return verdict(ok)
'''


def _mask(target: str, tokens: str, what: str, expected) -> Callable[[dict], str]:
    """A mask builder's check against its definition: `expected`, of (tokens, pad_idx), carried as values."""
    function = target.split(":")[1]

    def body(ex: dict) -> str:
        return f'''
{tokens} = {literal(ex[tokens])}
pad_idx = {ex["pad_idx"]!r}
# {what}
expected = {literal(expected(ex[tokens], ex["pad_idx"]))}


def main() -> int:
    {function} = load("{target}")
    show({tokens}={tokens}, pad_idx=pad_idx)
    return verdict(compare("{function}'s mask", {function}({tokens}, pad_idx), expected, atol=0))
'''
    return body


def _pad_mask(tokens, pad_idx):
    return (tokens != pad_idx)[:, None, None, :]


def _tgt_mask(tgt, pad_idx):
    return (tgt != pad_idx)[:, None, None, :] & causal(tgt.shape[1])


def _label_smoothing(ex: dict) -> str:
    logits, targets, pad, eps = ex["logits"], ex["targets"], ex["pad_idx"], ex["smoothing"]
    expected = F.cross_entropy(logits, targets, ignore_index=pad, label_smoothing=eps)
    return f'''
logits = {literal(logits)}
targets = {literal(targets)}
pad_idx = {pad!r}
smoothing = {eps!r}
# torch.nn.functional.cross_entropy(logits, targets, ignore_index=pad_idx, label_smoothing=smoothing)
expected = {literal(expected)}


def main() -> int:
    LabelSmoothingLoss = load("{LOSS}")
    show(logits=logits, targets=targets, pad_idx=pad_idx, smoothing=smoothing)
    loss = LabelSmoothingLoss(logits.shape[1], pad_idx, smoothing=smoothing)
    return verdict(compare("LabelSmoothingLoss", loss(logits, targets), expected, atol=1e-5))
'''


def _loss_ignores_padding(ex: dict) -> str:
    logits, targets, pad = ex["logits"], ex["targets"], ex["pad_idx"]
    expected = F.cross_entropy(logits, targets, ignore_index=pad, label_smoothing=0.1)
    return f'''
logits = {literal(logits)}
targets = {literal(targets)}
pad_idx = {pad!r}
smoothing = 0.1
# the same logits changed at the positions whose target is pad_idx, which must not count
changed = {literal(ex["changed"])}
# torch.nn.functional.cross_entropy(logits, targets, ignore_index=pad_idx, label_smoothing=smoothing)
expected = {literal(expected)}


def main() -> int:
    LabelSmoothingLoss = load("{LOSS}")
    loss = LabelSmoothingLoss(logits.shape[1], pad_idx, smoothing=smoothing)
    show(logits=logits, targets=targets, pad_idx=pad_idx, changed=changed)
    base = loss(logits, targets)
    if not isinstance(base, torch.Tensor):
        print(f"the loss should be a tensor, got {{type(base).__name__}}")
        return 1
    base = base.detach()
    ok = compare("loss after changing the logits at padded positions", loss(changed, targets), base, atol=1e-5)
    ok &= compare("loss", base, expected, atol=1e-5)
    real = logits.clone()
    real[0] += torch.linspace(-3, 3, logits.shape[1])
    if torch.allclose(loss(real, targets).detach(), base):
        print("--- the loss did not change when the logits of a real target changed")
        ok = False
    return verdict(ok)
'''


def _noam(ex: dict) -> str:
    step, d_model, warmup = ex["step"], ex["d_model"], ex["warmup"]
    want = d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
    return f'''
step, d_model, warmup = {step!r}, {d_model!r}, {warmup!r}
expected = {want!r}  # the formula of noam_lr's docstring, in float64


def main() -> int:
    noam_lr = load("{NOAM}")
    show(step=step, d_model=d_model, warmup=warmup)
    got = noam_lr(step, d_model, warmup)
    print("expected:", repr(expected))
    print("got:     ", repr(got))
    try:
        error = abs(float(got) - expected)
    except (TypeError, ValueError):
        print("got is not a number")
        return 1
    print(f"error:    {{error:.3g}} (allowed: a relative error of 1e-9)")
    return verdict(math.isclose(float(got), expected, rel_tol=1e-9))
'''


RECIPES: dict[str, Recipe] = {
    **BLOCK_RECIPES,
    "sdpa_matches_torch": Recipe(("q", "k", "v", "mask"), _sdpa_matches_torch),
    "sdpa_weights_rows_sum_to_one": Recipe(("q", "k", "mask"), _sdpa_rows_sum_to_one),
    "pad_mask_matches_definition": Recipe(("tokens", "pad_idx"), _mask(
        PAD_MASK, "tokens", "(tokens != pad_idx)[:, None, None, :]: True where a key may be attended", _pad_mask)),
    "tgt_mask_matches_definition": Recipe(("tgt", "pad_idx"), _mask(
        TGT_MASK, "tgt", "not padding (B, 1, 1, T) and causal (T, T, lower triangle): (B, 1, T, T)", _tgt_mask)),
    "label_smoothing_loss_matches_torch": Recipe(("logits", "targets", "pad_idx", "smoothing"), _label_smoothing),
    "label_smoothing_loss_ignores_padding": Recipe(("logits", "targets", "pad_idx", "changed"), _loss_ignores_padding),
    "noam_lr_matches_formula": Recipe(("step", "d_model", "warmup"), _noam),
    **ATTENTION_RECIPES,
    **MHA_RECIPES,
    **LAYER_RECIPES,
    **DATA_RECIPES,
    **BLOCKS1_RECIPES,
    **STACK_RECIPES,
}



# stored checks that the public suite's source does not show as check_stored(...) calls
# (case, atol, False): the module as the student builds it, without the case's weights (its pe table is the
# very thing the check checks)
STORED = {"assignment1": {"positional_encoding_matches_stored_reference": [("positional_encoding", 1e-5, False)]},
          "assignment2": {"sdpa_matches_stored_reference": [("sdpa", 1e-5), ("sdpa_masked", 1e-5)]}}

# why the other public checks get no script (by check id, or the end of one)
WHY_NOT = {
    "_stays_on_the_inputs_device": "it runs your component on PyTorch's meta device, which has no values to print",
    "_is_built_on_the_given_device": "it runs your component on PyTorch's meta device, which has no values to print",
    "_has_named_layers": "it checks names and shapes, which the report lists in full",
    "_has_named_parts": "it checks names and shapes, which the report lists in full",
    "_has_named_embedding": "it checks names and shapes, which the report lists in full",
    "_has_gamma_and_beta": "it checks names and shapes, which the report lists in full",
    "_pe_is_a_buffer": "it checks how the table is kept (a buffer, not a parameter), which the report says",
    "_gradients_reach_every_parameter": "it checks which parameters get a gradient, which the report names",
    "_applies_dropout_to_the_weights": "dropout's random mask is drawn in the grader's worker, from its own seed",
    "_rejects_d_model_not_divisible_by_n_heads": "it checks the error your code raises, which the report shows",
    "_rejects_sequences_longer_than_max_len": "it checks the error your code raises, which the report shows",
    "_rejects_step_0": "it checks the error your code raises, which the report shows",
    "_init_is_xavier_uniform": "it checks the spread of freshly drawn weights, not one example",
    "end_to_end_training_lowers_the_loss": "it trains a whole model for many steps (`grade train` shows training)",
    **DATA_WHY_NOT,
    **BLOCKS1_WHY_NOT,
    **STACK_WHY_NOT,
}
