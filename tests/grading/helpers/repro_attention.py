"""`grade --repro` recipes for more of assignment 2's attention and mask checks (tests/grading/public/repro.py
lists them): properties checked on the student's own answer, as the checks check them."""

import torch

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests.grading.helpers.names import CAUSAL_MASK, SDPA
from tests.grading.helpers.oracles import graded_rows

_CALL = f'''

def attend(v):
    """The pair (out, weights) of your attention on q, k, v and mask; None, saying why, if it is not one."""
    got = load("{SDPA}")(q, k, v, mask)
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
        print(f"expected a pair of tensors (out, weights), got {{type(got).__name__}}")
        return None
    if got[1].shape != shape:
        print(f"weights should have the shape {{tuple(shape)}}, got {{tuple(got[1].shape)}}")
        return None
    return got[0].detach(), got[1].detach()
'''


def _head(ex: dict, v) -> str:
    q, k, mask = ex["q"], ex["k"], ex["mask"]
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    return f'''
q = {literal(q)}
k = {literal(k)}
v = {literal(v)}
mask = {literal(mask)}  # True = may attend
shape = torch.Size({shape!r})  # the weights': (..., T_q, T_k)
# rows whose keys are all blocked are not graded
graded = {literal(graded_rows(mask, shape))}
''' + _CALL


def _blocked_keys(ex: dict) -> str:
    v = torch.ones(*torch.broadcast_shapes(ex["q"].shape[:-2], ex["k"].shape[:-2]), ex["k"].shape[-2], 1)
    return _head(ex, v) + '''

def main() -> int:
    show(q=q, k=k, mask=mask)  # v is not part of the example: the weights must not depend on it
    got = attend(v)
    if got is None:
        return 1
    weights, rows = got[1], graded[..., None].expand(shape)
    blocked = rows & ~mask.expand(shape)
    ok = compare("weights of blocked keys", weights, torch.zeros(shape), atol=0, rtol=0, where=blocked)
    if bool((weights[rows & mask.expand(shape)] <= 0).any()):
        print("--- a key the mask allows got a zero or negative weight")
        ok = False
    return verdict(ok)
'''


def _convex(ex: dict) -> str:
    return _head(ex, ex["v"]) + '''

def main() -> int:
    show(q=q, k=k, v=v, mask=mask)
    got = attend(v)
    if got is None:
        return 1
    out, weights = got
    sums = weights.double().sum(-1)
    ok = compare("sum of each row of weights", sums, torch.ones_like(sums), atol=1e-5, where=graded)
    mixed = (weights.double() @ v.double()).float()
    ok &= compare("out compared with weights @ v", out, mixed, atol=1e-5, where=graded[..., None].expand(out.shape))
    # each output lies between the smallest and the largest value of the keys its row may see
    visible = (mask if mask is not None else torch.ones(1, dtype=torch.bool)).expand(shape)[..., None]
    values = v.double()[..., None, :, :].expand(*shape, v.shape[-1])
    low = torch.where(visible, values, torch.inf).min(-2).values
    high = torch.where(visible, values, -torch.inf).max(-2).values
    outside = ((out.double() < low - 1e-5) | (out.double() > high + 1e-5)) & graded[..., None]
    if bool(outside.any()):
        i = [int(j) for j in torch.nonzero(outside)[0]]
        print(f"--- out{i} = {float(out[tuple(i)]):.6g} lies outside [{float(low[tuple(i)]):.6g}, "
              f"{float(high[tuple(i)]):.6g}], the range of the values its row may see")
        ok = False
    return verdict(ok)
'''


def _causal(ex: dict) -> str:
    T = ex["T"]
    return f'''
T = {T!r}
# mask[0, 0, i, j] = j <= i: the lower triangle with its diagonal, (1, 1, T, T)
expected = {literal(torch.ones(T, T, dtype=torch.bool).tril()[None, None])}


def main() -> int:
    show(T=T)
    return verdict(compare(f"make_causal_mask({{T}})", load("{CAUSAL_MASK}")(T), expected, atol=0))
'''


ATTENTION_RECIPES = {
    "sdpa_blocked_keys_get_zero_weight": Recipe(("q", "k", "mask"), _blocked_keys),
    "sdpa_output_is_a_convex_combination_of_values": Recipe(("q", "k", "v", "mask"), _convex),
    "causal_mask_is_lower_triangular": Recipe(("T",), _causal),
}
