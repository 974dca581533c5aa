"""`grade --repro` recipes for assignment 2's attention edge cases (repro_blocks1.py lists them with
assignment 1's), and the script pieces both modules share."""

import math
import textwrap

import torch

from grader.interactive.repro.discover import Recipe
from grader.interactive.repro.literal import literal
from tests import strategies as s
from tests.grading.helpers.names import SDPA
from tests.grading.helpers.oracles import attention, graded_rows
from tests.grading.helpers.repro_leaks import values


def tensor_or_say(name: str, shape: str, what: str, float32: bool = True) -> str:
    """Script lines (in main()) that stop, saying why, where `name` is not a tensor of shape `shape`."""
    dtype = f" and {name}.dtype == torch.float32" if float32 else ""
    kind = "float32 tensor" if float32 else "tensor"
    return f'''\
    if not (isinstance({name}, torch.Tensor) and tuple({name}.shape) == tuple({shape}){dtype}):
        print(f"{what} should be a {kind} of shape {{tuple({shape})}}, got {{{name}!r}}"[:400])
        return 1'''


def placement(shown: str, call: str, name: str, atol: float, in_eval: str | None) -> str:
    """main() of a dropout-placement check: built with dropout=1.0, the output in train() mode must be
    `expected`; where `in_eval` names a tensor, the eval() output must equal it first."""
    first = "" if in_eval is None else (
        f'    ok = compare("{name} output in eval() mode with dropout=1.0", module.eval()({call}), {in_eval}, '
        f'atol={atol!r})\n')
    return f'''

def main() -> int:
    module = build()  # built with dropout=1.0
    if module is None:
        return 1
    show({shown})
    ok = True
{first}    torch.manual_seed(1)
    # nn.Dropout(1.0) in train() mode drops everything whatever its random numbers: the output shows where it sits
    ok &= compare("{name} output in train() mode with dropout=1.0", module.train()({call}), expected, atol={atol!r})
    return verdict(ok)
'''


_PAIR = '''\
    if not (isinstance(got, tuple) and len(got) == 2):
        print(f"expected a pair (out, weights), got {type(got).__name__}")
        return 1'''


def _fully_blocked(ex: dict) -> str:
    q, k, v, mask = ex["q"], ex["k"], ex["v"], ex["mask"]
    out, w = attention(q, k, v, mask)
    return values(q=q, k=k, v=v, mask=mask) + f'''\
# in float64, rounded to float32 (NaN in the rows whose keys are all blocked: those are not compared)
expected_out = {literal(out.float())}
expected_weights = {literal(w.float())}
# rows with a visible key (the first query sees none)
graded = {literal(graded_rows(mask, w.shape))}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, v=v, mask=mask)
    got = sdpa(q, k, v, mask)
{_PAIR}
    ok = True
    for name, t in zip(("out", "weights"), got):
{textwrap.indent(tensor_or_say("t", "(expected_out if name == 'out' else expected_weights).shape", "{name}"), "    ")}
        if not bool(torch.isfinite(t).all()):
            print(f"--- {{name}} has NaN or inf where a query's keys are all blocked: it should stay finite")
            print(t.detach())
            ok = False
    out, weights = got
    ok &= compare("weights of the rows with a visible key", weights, expected_weights, atol=1e-5,
                  where=graded[..., None].expand(expected_weights.shape))
    ok &= compare("output of the rows with a visible key", out, expected_out, atol=1e-5,
                  where=graded[..., None].expand(expected_out.shape))
    return verdict(ok)
'''


def _scales(ex: dict) -> str:
    q, k, dk = ex["q"], ex["k"], ex["d_k"]
    raw = q.double() @ k.double().transpose(-2, -1)
    raw = raw - raw[..., :1]
    return values(q=q, k=k, d_k=dk) + f'''\
# v is not part of the check's example: the weights must not depend on it, so any v of this shape will do
v = torch.ones(q.shape[0], k.shape[-2], 3)
# softmax is shift-invariant: log(w_j / w_0) = score_j - score_0 = (q @ k^T)_j - (q @ k^T)_0, over sqrt(d_k)
expected = {literal((raw / math.sqrt(dk)).float())}
raw = {literal(raw)}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, d_k=d_k)
    got = sdpa(q, k, v)
{_PAIR}
    w = got[1]
{tensor_or_say("w", "expected.shape", "weights")}
    diffs = w.detach().double().log() - w.detach().double()[..., :1].log()
    fitted = float((diffs.nan_to_num(0, 0, 0) * raw).sum() / (raw * raw).sum())
    print(f"scores should be q @ k^T * {{1 / math.sqrt(d_k):.4g}} (1 / sqrt(d_k)); yours look like q @ k^T * "
          f"{{fitted:.4g}}")
    return verdict(compare("score differences log(w_j / w_0)", diffs.float(), expected, atol=2e-3, rtol=2e-3))
'''


def _half(ex: dict) -> str:
    q, k, v, mask = ex["q"], ex["k"], ex["v"], ex["mask"]
    # the check's float32 inputs are constants of its source; where the recorded ones are not their
    # float16 copies (another draw), the float16 values widened stand in for them
    drawn = s.tensor([2, 4, 8], 11), s.tensor([2, 5, 8], 12), s.tensor([2, 5, 3], 13)
    wide = [a if torch.equal(a.half(), h) else h.float() for a, h in zip(drawn, (q, k, v), strict=True)]
    return values(q=q, k=k, v=v, mask=mask) + f'''\
# the float32 inputs the check started from (q, k and v above are their float16 copies)
q32 = {literal(wide[0])}
k32 = {literal(wide[1])}
v32 = {literal(wide[2])}


def main() -> int:
    sdpa = load("{SDPA}")
    show(q=q, k=k, v=v, mask=mask)
    got = sdpa(q32, k32, v32, mask)
{_PAIR}
    want = got[0]
{tensor_or_say("want", "(2, 4, 3)", "out in float32")}
    want = want.detach()
    got = sdpa(q, k, v, mask)  # float16: an error here is the failure the check reports
    out = got[0] if type(got) is tuple and got else got
{tensor_or_say("out", "want.shape", "out in float16", float32=False)}
    if not bool(torch.isfinite(out.float()).all()):
        print("--- attention in float16 returns NaN or inf:", out.detach(), sep="\\n")
        return verdict(False)
    # compared with your own float32 out, to float16's precision
    return verdict(compare("out in float16 compared with your float32 out", out.float(), want,
                           atol=0.02 * max(1.0, float(want.abs().max())), rtol=0.02))
'''


SDPA_RECIPES = {
    "sdpa_fully_blocked_row_stays_finite": Recipe(("q", "k", "v", "mask"), _fully_blocked),
    "sdpa_scales_scores_by_sqrt_d_k": Recipe(("q", "k", "d_k"), _scales),
    "sdpa_masks_in_half_precision": Recipe(("q", "k", "v", "mask"), _half),
}

SDPA_WHY_NOT = {
    "causal_mask_accepts_a_device": "its one fixed call, make_causal_mask(3, device='cpu'), records no example: the "
                                    "report shows what it got",
}
