"""`grade --repro` recipes for MultiHeadAttention's checks (tests/grading/public/repro.py lists them).

The checks draw their weights with mha_weights(d_model, seed) and record the seed with their
example (grader.suite.example.carrying): the weights are drawn again here, the same, and written
into the script as numbers with nn.MultiheadAttention's answers on them."""

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import MHA
from tests.grading.helpers.oracles import mha_weights, torch_mha

_BUILD = f'''

def build():
    """MultiHeadAttention(d_model, n_heads) given the check's weights, in eval mode (None: it has not
    got the contract's names and shapes)."""
    MultiHeadAttention = load("{MHA}")
    module = MultiHeadAttention(d_model, n_heads)
    return module if give(module, state) else None
'''


def _head(d: int, h: int, seed: int, **inputs) -> str:
    written = "".join(f"{name} = {literal(value)}\n" for name, value in inputs.items())
    return f'''
d_model, n_heads = {d!r}, {h!r}
{written}# the weights the check gave your module, by the contract's names (drawn from seed {seed})
state = {literal(mha_weights(d, seed))}
'''


def _matches_torch(ex: dict) -> str:
    q, k, v, mask, h = ex["q"], ex["k"], ex["v"], ex["mask"], ex["n_heads"]
    d = q.shape[-1]
    out, weights = torch_mha(mha_weights(d, ex["seed"]), d, h, q, k, v, key_padding=~mask[:, 0, 0, :])
    return _head(d, h, ex["seed"], q=q, k=k, v=v, mask=mask) + f'''
# nn.MultiheadAttention on these weights (its masks: True = blocked), weights per head
expected_out = {literal(out)}
expected_weights = {literal(weights)}
''' + _BUILD + '''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(q=q, k=k, v=v, mask=mask, n_heads=n_heads)
    ok = compare("MultiHeadAttention output", module(q, k, v, mask), expected_out, atol=1e-4)
    ok &= compare("attention_weights", getattr(module, "attention_weights", None), expected_weights, atol=1e-5)
    return verdict(ok)
'''


def _matches_torch_causal(ex: dict) -> str:
    x, mask, h = ex["x"], ex["mask"], ex["n_heads"]
    d = x.shape[-1]
    out, _ = torch_mha(mha_weights(d, ex["seed"]), d, h, x, x, x, attn_mask=~mask[0, 0])
    return _head(d, h, ex["seed"], x=x, mask=mask) + f'''
# nn.MultiheadAttention on these weights, the causal mask (its masks: True = blocked)
expected_out = {literal(out)}
''' + _BUILD + '''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(x=x, mask=mask, n_heads=n_heads)
    return verdict(compare("MultiHeadAttention output", module(x, x, x, mask), expected_out, atol=1e-4))
'''


def _keeps_attention_weights(ex: dict) -> str:
    q, kv, mask, h = ex["q"], ex["kv"], ex["mask"], ex["n_heads"]
    return _head(q.shape[-1], h, ex["seed"], q=q, kv=kv, mask=mask) + _BUILD + '''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(q=q, kv=kv, mask=mask, n_heads=n_heads)
    module(q, kv, kv, mask)
    weights = getattr(module, "attention_weights", None)
    shape = (q.shape[0], n_heads, q.shape[1], kv.shape[1])
    if not isinstance(weights, torch.Tensor) or weights.shape != shape or weights.dtype != torch.float32:
        print(f"attention_weights should be a float32 tensor of shape {shape}, got {weights!r}")
        return 1
    print("attention_weights:", weights.detach(), sep="\\n")
    sums = weights.detach().double().sum(-1)
    ok = compare("sum of each row of attention_weights", sums, torch.ones_like(sums), atol=1e-5)
    blocked = (~mask).expand(shape)
    ok &= compare("attention_weights of padded keys", weights, torch.zeros_like(weights), atol=0, rtol=0,
                  where=blocked)
    return verdict(ok)
'''


def _self_consistent(name: str, kept: str, moved: str, what: str) -> str:
    """main() of a check that compares the module's outputs on x and on `changed` with each other:
    `kept` (an index) must stay as it was, `moved` must change."""
    return _BUILD + f'''

def main() -> int:
    module = build()
    if module is None:
        return 1
    show(x=x, changed=changed, mask=mask, n_heads=n_heads)
    before, after = module(x, x, x, mask), module(changed, changed, changed, mask)
    if not (isinstance(before, torch.Tensor) and before.shape == x.shape):
        print(f"the output should be a tensor of shape {{tuple(x.shape)}}, got {{before!r}}")
        return 1
    before = before.detach()
    # {what}
    ok = compare("{name}", after[{kept}], before[{kept}], atol=1e-5)
    if isinstance(after, torch.Tensor) and torch.allclose(before[{moved}], after[{moved}].detach(), atol=1e-6):
        print("--- the output where the input changed did not change")
        ok = False
    return verdict(ok)
'''


def _does_not_leak(ex: dict) -> str:
    x, t = ex["x"], ex["changed_from_position"]
    return _head(x.shape[-1], ex["n_heads"], ex["seed"], x=x, changed=ex["changed"], mask=ex["mask"]) + (
        _self_consistent(f"outputs at positions 0..{t - 1} (compared with your own output before the change)",
                         f":, :{t}", f":, {t}:",
                         f"changed only from position {t}: a causal mask keeps the outputs before it as they were"))


def _batch_independent(ex: dict) -> str:
    x = ex["x"]
    return _head(x.shape[-1], ex["n_heads"], ex["seed"], x=x, changed=ex["changed_x"], mask=None) + (
        _self_consistent("outputs of the batch elements that did not change (compared with your own output "
                         "before the change)", "1:", "0",
                         "only batch element 0 changed: the others' outputs must stay as they were"))


MHA_RECIPES = {
    "mha_matches_torch": Recipe(("q", "k", "v", "mask", "n_heads", "seed"), _matches_torch),
    "mha_matches_torch_with_a_causal_mask": Recipe(("x", "mask", "n_heads", "seed"), _matches_torch_causal),
    "mha_keeps_attention_weights": Recipe(("q", "kv", "mask", "n_heads", "seed"), _keeps_attention_weights),
    "mha_causal_self_attention_does_not_leak": Recipe(
        ("x", "changed", "mask", "changed_from_position", "n_heads", "seed"), _does_not_leak),
    "mha_batch_elements_are_independent": Recipe(("x", "changed_x", "n_heads", "seed"), _batch_independent),
}
