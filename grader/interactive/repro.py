"""`grade assignmentN --repro CHECK`: a failing check as a plain script, to step through in a debugger.

The script (repro_CHECK.py, written in the current folder) imports torch and the student's own
files, never the grader: it builds the check's example, runs the student's component on it,
prints the inputs, the expected and the obtained values and the largest error, and exits 1 while
they differ (0 once the code is fixed). Expected values are carried as numbers: stored reference
outputs as stored, torch's answers as torch gave them here; no reference code goes in. A property
(rows of weights sum to one) is checked as the property.

The checks it knows (`reproducible`):
- every public check that compares with stored reference outputs (`*_matches_stored_reference`,
  whose cases are read from the public suite): the stored cases themselves, weights included;
- checks whose failing example the report prints in full (Hypothesis shrinks it to a few values):
  sdpa_matches_torch, sdpa_weights_rows_sum_to_one, pad_mask_matches_definition,
  tgt_mask_matches_definition, label_smoothing_loss_matches_torch, noam_lr_matches_formula. Their
  example comes from grading that check alone on the submission.
Any other check: a one-line message naming these, exit status 2.
"""

import ast
import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.course import Assignment, ConfigError, Course

SDPA = "assignment2.attention:scaled_dot_product_attention"
PAD_MASK, TGT_MASK = "assignment2.masks:make_pad_mask", "assignment2.masks:make_tgt_mask"
LOSS = "assignment4.training:LabelSmoothingLoss"
NOAM = "assignment4.training:noam_lr"


# Stored cases ------------------------------------------------------------------------------

def stored_cases(course: Course, assignment: str) -> dict[str, list[tuple[str, float]]]:
    """check id -> [(stored case, atol)], read from the public suite: each test that calls
    check_stored(student, "assignmentN", "case", atol=...) with constants, and the attention's
    stored check, which compares the pair (out, weights) of two cases."""
    path = course.suites / "public" / f"test_{assignment}.py"
    if not path.is_file():
        return {}
    found: dict[str, list[tuple[str, float]]] = {}
    for node in ast.parse(path.read_text()).body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        cases = []
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check_stored"
                    and len(call.args) >= 3 and all(isinstance(a, ast.Constant) for a in call.args[1:3])):
                given = [k.value.value for k in call.keywords if k.arg == "atol" and isinstance(k.value, ast.Constant)]
                case = call.args[2]
                assert isinstance(case, ast.Constant)
                atol = float(given[0]) if given and isinstance(given[0], (int, float)) else 1e-5
                cases.append((str(case.value), atol))
        if cases:
            found[node.name.removeprefix("test_")] = cases
    if assignment == "assignment2":
        found["sdpa_matches_stored_reference"] = [("sdpa", 1e-5), ("sdpa_masked", 1e-5)]
    return found


def _stored(course: Course, assignment: str) -> dict:
    import torch

    return torch.load(course.suites / "public" / "expected" / f"{assignment}.pt", weights_only=True)


# Examples the report prints ------------------------------------------------------------------

ENTRY = re.compile(r"^(\w+)(?:: (\w+) \(([\d, ]*)\) = | = )", re.M)


def parse_example(text: str) -> dict:
    """describe()'s text (grader.suite.checks) back into values: tensors printed in full (9 significant
    digits, which give a float32 back exactly) and plain values. A tensor printed only in part: ValueError."""
    import torch

    starts = list(ENTRY.finditer(text))
    if not starts or text[:starts[0].start()].strip():
        # an exception's example is Hypothesis's own repr of what it drew, tensors rounded to 4 digits
        raise ValueError("the report shows it rounded, as Hypothesis printed it")
    values: dict = {}
    for m, end in zip(starts, [*(s.start() for s in starts[1:]), len(text)], strict=True):
        name, dtype, shape, body = m.group(1), m.group(2), m.group(3), text[m.end():end].strip()
        if dtype is None:
            values[name] = ast.literal_eval(body)
            continue
        if "..." in body:
            raise ValueError(f"{name} is too large for the report to print in full")
        body = re.sub(r"(?<![\w.])(-?)inf\b", r"\g<1>1e999", body)  # 1e999 reads back as infinity
        data = ast.literal_eval(re.sub(r"(?<![\w.])nan\b", "None", body))
        dims = tuple(int(d) for d in shape.replace(" ", "").split(",") if d)
        t = torch.tensor(_nan_for_none(data), dtype=getattr(torch, dtype))
        values[name] = t.reshape(dims)
    return values


def _nan_for_none(data):
    if isinstance(data, list):
        return [_nan_for_none(x) for x in data]
    return math.nan if data is None else data


@dataclass(frozen=True)
class Recipe:
    inputs: tuple[str, ...]  # the example's entries the script needs, in order
    body: Callable[[dict], str]  # the example -> the script's part after the prelude


def _sdpa_matches_torch(ex: dict) -> str:
    import torch.nn.functional as F

    q, k, v, mask = ex["q"], ex["k"], ex["v"], ex["mask"]
    w = _weights(q, k, mask)
    out = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    rows = _rows(mask, w.shape)
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
    import torch

    q, k, mask = ex["q"], ex["k"], ex["mask"]
    w = _weights(q, k, mask)
    rows = _rows(mask, w.shape)
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
    import torch

    return (tgt != pad_idx)[:, None, None, :] & torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool).tril()


def _label_smoothing(ex: dict) -> str:
    import torch.nn.functional as F

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


EXAMPLES: dict[str, Recipe] = {
    "sdpa_matches_torch": Recipe(("q", "k", "v", "mask"), _sdpa_matches_torch),
    "sdpa_weights_rows_sum_to_one": Recipe(("q", "k", "mask"), _sdpa_rows_sum_to_one),
    "pad_mask_matches_definition": Recipe(("tokens", "pad_idx"), _mask(
        PAD_MASK, "tokens", "(tokens != pad_idx)[:, None, None, :]: True where a key may be attended", _pad_mask)),
    "tgt_mask_matches_definition": Recipe(("tgt", "pad_idx"), _mask(
        TGT_MASK, "tgt", "not padding (B, 1, 1, T) and causal (T, T, lower triangle): (B, 1, T, T)", _tgt_mask)),
    "label_smoothing_loss_matches_torch": Recipe(("logits", "targets", "pad_idx", "smoothing"), _label_smoothing),
    "noam_lr_matches_formula": Recipe(("step", "d_model", "warmup"), _noam),
}


def _weights(q, k, mask):
    """float64 attention weights, rows whose keys are all blocked NaN (as the check's own oracle)."""
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1)


def _rows(mask, shape):
    import torch

    return torch.ones(shape[:-1], dtype=torch.bool) if mask is None else mask.expand(shape).any(-1)


# The script ----------------------------------------------------------------------------------

def reproducible(course: Course, spec: Assignment) -> list[str]:
    """The public checks of `spec` that --repro can write a script for, in course.toml's order."""
    known = set(stored_cases(course, spec.name)) | set(EXAMPLES)
    return [chk.id for comp in spec.components for chk in comp.checks if chk.tier == "public" and chk.id in known]


def literal(value) -> str:
    """Python source that rebuilds `value` exactly: tensors element by element (a float's repr reads
    back as the same float, and so as the same float32), tuples, lists, dicts and plain values."""
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        items = [_number(x) for x in t.reshape(-1).tolist()]
        flat = textwrap.fill(", ".join(items), width=100, initial_indent="    ", subsequent_indent="    ",
                             break_long_words=False, break_on_hyphens=False)
        dtype = str(t.dtype).removeprefix("torch.")
        return f"torch.tensor([\n{flat}\n], dtype=torch.{dtype}).reshape({tuple(t.shape)!r})"
    if isinstance(value, tuple):
        return "(" + "".join(f"{literal(v)}, " for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"\n    {k!r}: {literal(v)}" for k, v in value.items()) + "\n}"
    if isinstance(value, float):
        return _number(value)
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    raise TypeError(f"cannot write a {type(value).__name__} into a script")


def _number(x) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return f'float("{x}")'
    return repr(x)


PRELUDE = '''"""Reproduces the check {check} of `grade {assignment}` on your code, without the grader.

Written by `grade {assignment} --repro {check}`. Run it:

    python {filename}            exit status 1 while your code fails this check, 0 once it passes
    python -m pdb {filename}     or in your IDE's debugger: put a breakpoint in your own code

It imports torch and your files only ({submission}).
{about}
"""

import importlib
import importlib.machinery
import importlib.util
import math
import sys
from pathlib import Path

import torch

SUBMISSION = Path({submission_literal})  # the folder that holds assignment1/, assignment2/, ...

torch.set_printoptions(precision=6, sci_mode=False)


def load(target: str):
    """"assignment2.attention:scaled_dot_product_attention" -> that object of your code. Your tree is
    imported as the package `submission`, as the grader imports it (relative imports work)."""
    if "submission" not in sys.modules:
        package = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("submission", None, is_package=True))
        package.__path__ = [str(SUBMISSION)]
        sys.modules["submission"] = package
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(f"submission.{{module}}"), name)


def show(**inputs) -> None:
    print("=== inputs")
    for name, value in inputs.items():
        print(f"{{name}} =", value)


def compare(name: str, got, expected: torch.Tensor, *, atol: float, rtol: float = 1e-4, where=None) -> bool:
    """Whether `got` matches `expected` within atol + rtol * |expected| everywhere (only where `where` is
    True, when given), as the grader compares them; prints both and the largest error."""
    print(f"=== {{name}}")
    if not isinstance(got, torch.Tensor):
        print(f"expected a torch.Tensor, got {{type(got).__name__}}")
        return False
    if got.shape != expected.shape or got.dtype != expected.dtype:
        print(f"expected {{expected.dtype}} of shape {{tuple(expected.shape)}}, got {{got.dtype}} of shape "
              f"{{tuple(got.shape)}}")
        return False
    got = got.detach()
    print("expected:", expected, sep="\\n")
    print("got:", got, sep="\\n")
    if expected.dtype.is_floating_point:
        g, e = got.double(), expected.double()
        # as the grader compares (grader.suite.checks.assert_close): NaN and inf never equal anything
        finite = torch.isfinite(g) & torch.isfinite(e)
        error = torch.where(finite, (g - e).abs(), torch.full_like(g, math.inf))
        bad = ~finite | (error > atol + rtol * torch.where(finite, e.abs(), torch.zeros_like(e)))
    else:
        error = (got != expected).double()
        bad = error > 0
    if where is not None:
        bad = bad & where
        error = torch.where(where, error, torch.zeros_like(error))
    worst = [int(i) for i in torch.unravel_index(error.argmax(), error.shape)] if error.dim() else []
    print(f"largest error: {{float(error.max()):.6g}} at index {{worst}} "
          f"(allowed: {{atol:g}} + {{rtol:g}} * |expected|)")
    if bool(bad.any()):
        print(f"differs at {{int(bad.sum())}} of {{bad.numel()}} positions")
    return not bool(bad.any())


def verdict(ok: bool) -> int:
    print("PASS: your code passes this example" if ok else "FAIL: your code differs from what is expected here")
    return 0 if ok else 1
'''

END = '''

if __name__ == "__main__":
    sys.exit(main())
'''


def _stored_body(course: Course, assignment: str, cases: list[tuple[str, float]]) -> str:
    data = _stored(course, assignment)
    written = []
    for name, atol in cases:
        c = data[name]
        written.append(f'''
    # stored case {name!r}: the reference's output, computed by your instructors and stored as numbers
    {name!r}: {{
        "target": {c["target"]!r}, "args": {literal(tuple(c["args"]))}, "kwargs": {literal(dict(c["kwargs"]))},
        "atol": {atol!r},
        "state": {literal(dict(c["state"] or {}))},
        "inputs": {literal(tuple(c["inputs"]))},
        "output": {literal(c["output"])},
    }},''')
    return '''
CASES = {''' + "".join(written) + '''
}


def run(name: str, case: dict) -> bool:
    print(f"##### case {name}: {case['target']}, args {case['args']}, kwargs {case['kwargs']}")
    made = load(case["target"])
    if case["state"]:  # a module: built as the grader builds it, given these weights by name, in eval mode
        module = made(*case["args"], **case["kwargs"])
        own = {**dict(module.named_parameters()), **dict(module.named_buffers())}
        missing = [n for n in case["state"] if n not in own or own[n].shape != case["state"][n].shape]
        if missing:
            print(f"your module has no parameter or buffer {missing[0]!r} of shape "
                  f"{tuple(case['state'][missing[0]].shape)} (names and shapes are in the docstring)")
            return False
        with torch.no_grad():
            for n, value in case["state"].items():
                own[n].copy_(value)
        module.eval()
        show(**{f"input{i}": x for i, x in enumerate(case["inputs"])})
        got = module(*case["inputs"])
    else:
        show(**{f"input{i}": x for i, x in enumerate(case["inputs"])})
        got = made(*case["args"], *case["inputs"], **case["kwargs"])
    expected = case["output"]
    if isinstance(expected, tuple):
        if not (isinstance(got, tuple) and len(got) == len(expected)):
            print(f"expected a tuple of {len(expected)} values, got {type(got).__name__}")
            return False
        return all([compare(f"{name}: output {i}", g, e, atol=case["atol"])
                    for i, (g, e) in enumerate(zip(got, expected))])
    return compare(f"{name}: output", got, expected, atol=case["atol"])


def main() -> int:
    results = [run(name, case) for name, case in CASES.items()]
    return verdict(all(results))
'''


def write(*, course: Course, assignment: str, check: str, submission: Path, example: dict | None,
          folder: Path) -> Path:
    """Write folder/repro_CHECK.py and return its path; `example`: the failing example's values (checks
    of EXAMPLES), None for the stored checks."""
    cases = stored_cases(course, assignment).get(check)
    if cases:
        body, about = _stored_body(course, assignment, cases), (
            "The cases are the check's stored cases: the inputs, the weights and the reference's outputs, as "
            "numbers.")
    else:
        assert example is not None
        body, about = EXAMPLES[check].body(example), (
            "The example is the smallest failing one that the grader found (the report's example), exactly.")
    path = folder / f"repro_{check}.py"
    head = PRELUDE.format(check=check, assignment=assignment, filename=path.name, about=about,
                          submission=submission, submission_literal=repr(str(submission)))
    path.write_text(head + body + END)
    return path


def main(*, course: Course, assignment: str, check: str, submission: Path, folder: Path | None = None) -> int:
    """`grade ASSIGNMENT --repro CHECK`: write the script and print its path. Exit status 0 when it is
    written (or the check passes: nothing to reproduce), 1 when the failure has no example to rebuild
    exactly (a stub, or an exception's rounded example), 2 for a check it cannot reproduce."""
    from grader.grading.only import check_ids, unknown

    spec = course.assignment(assignment)
    known = reproducible(course, spec)
    if check not in check_ids(spec):
        raise unknown(check, spec, option="--repro")
    if check not in known:
        raise ConfigError(f"--repro: {check} cannot be reproduced as a script; {assignment}'s checks that can: "
                          f"{', '.join(known) or 'none'}")
    submission = Path(submission).resolve()
    folder = Path.cwd() if folder is None else folder
    example = None
    if check in EXAMPLES:
        outcome = _grade_alone(course, assignment, check, submission)
        if outcome.status == "passed":
            print(f"{check} passes on {submission}: nothing to reproduce.")
            return 0
        if outcome.reason == "not_attempted":  # a stub: its NotImplementedError is all there is to see
            print(f"{check}: {outcome.message}: nothing to reproduce yet.")
            return 1
        text = str(outcome.details.get("example", ""))
        try:
            example = parse_example(text)
            missing = [name for name in EXAMPLES[check].inputs if name not in example]
            if missing:
                raise ValueError(f"the example has no {', '.join(missing)}")
        except (ValueError, SyntaxError) as e:
            reason = e if text else "the report shows no example"
            print(f"{check} {outcome.status} ({outcome.message}), but its example cannot be rebuilt exactly "
                  f"({reason}): `grade {assignment} --only {check}` shows it.")
            return 1
    path = write(course=course, assignment=assignment, check=check, submission=submission, example=example,
                 folder=folder)
    print(path)
    return 0


def _grade_alone(course: Course, assignment: str, check: str, submission: Path):
    """The check's outcome on `submission`, graded alone (its failing example shrunk, as in the report)."""
    from grader.grading.warm import Grader

    report = Grader(course, template=False).grade(assignment=assignment, submission=submission,
                                                  only=frozenset([check]))
    return next(t.outcome for c in report.components for t in c.checks if t.id == check)
