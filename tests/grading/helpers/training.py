"""assignment4's steps run on the kit's TinyTranslator: batches, the definition of train_epoch (here), a
check of greedy decoding against its definition, and the same steps run by the submission (in the sandbox).

Greedy decoding is checked, never done: each token the submission emitted is held to the argmax of the
teacher-forced forward pass on its own tokens before it (`first_departure`), so that the student kit ships
no decoder to paste in (issue 51)."""

import math

import torch

from grader.sandbox.child.fixtures import TinyTranslator
from grader.suite import draws
from grader.suite.checks import Found, Mismatch, describe, expect_tensor, short
from grader.suite.example import carrying
from grader.suite.handle import Remote
from tests.grading.helpers.names import EOS_ID, GREEDY, PAD_ID, SOS_ID, TRAIN_EPOCH

# Types that have float() but are not a number in the contract's sense (numbers.Real, not bool)
NOT_NUMBERS = ("Tensor", "Parameter", "ndarray", "Decimal", "str", "bytes")


def expect_number(value, *, name: str, example: str = "", hint: str = "") -> float:
    """`value` as a Python float, where it is a finite real number of any type (a float, an int, a
    float subclass such as NumPy's float64, which np.power gives): the contract asks for a number,
    not one Python type. A bool, a tensor or an array is refused. A value that cannot travel as
    plain data (a NumPy float) is asked for its float() where it lives."""
    got = value
    if isinstance(value, Remote) and value.type not in NOT_NUMBERS:
        got = value.method("__float__")
    if type(got) not in (float, int) or not math.isfinite(got):
        raise Mismatch(f"{name} should be a finite number", expected="a float (any real number type)",
                       got=short(value), example=example, hint=hint)
    return float(got)


def collate_expected(pairs, pad_idx):
    def pad(rows):
        width = max(len(r) for r in rows)
        return torch.tensor([list(r) + [pad_idx] * (width - len(r)) for r in rows], dtype=torch.long)

    return (pad([a for a, _ in pairs]), pad([[SOS_ID, *b] for _, b in pairs]), pad([[*b, EOS_ID] for _, b in pairs]))


def batches_data(batches) -> list:
    """Batches (src, tgt_in, tgt_out) as plain lists, for an example's data (for --repro: a list of
    tensors would be recorded as its text only)."""
    return [[t.tolist() for t in batch] for batch in batches]


def tiny_batches(seed: int, n_batches: int = 3, vocab: int = 9, sizes: tuple[int, ...] | None = None):
    """Batches (src, tgt_in, tgt_out) with some padding, as collate makes them: 3 pairs each, or
    sizes[i] pairs in batch i (batches of different sizes and padding tell a mean of the batch
    losses from one weighted by sentences or tokens)."""
    g = torch.Generator().manual_seed(draws.seed(seed))
    out = []
    for size in sizes or (3,) * n_batches:
        pairs = []
        for _ in range(size):
            n, m = (int(x) for x in torch.randint(1, 5, (2,), generator=g))
            pairs.append((torch.randint(4, vocab, (n,), generator=g).tolist(),
                          torch.randint(4, vocab, (m,), generator=g).tolist()))
        out.append(collate_expected(pairs, PAD_ID))
    return out


def train_epoch_expected(batches, seed: int, lr: float, gamma: float | None = None):
    """(mean loss, final state) of the definition, run here on the same tiny model: SGD(lr, momentum=0.5),
    stepped after each batch, then StepLR(step_size=1, gamma). Written out, with torch.optim's own arithmetic,
    because torch.optim's first step imports torch._dynamo, two seconds of a cold grade (tests/kit's
    test_assignment4 holds it to torch.optim)."""
    model = TinyTranslator(9, 9, init=seed).train()
    params = [p for p in model.parameters() if p.requires_grad]
    momentum: list[torch.Tensor | None] = [None] * len(params)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_ID)
    losses = []
    for src, tgt_in, tgt_out in batches:
        for p in params:
            p.grad = None
        logits = model(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
        loss.backward()
        with torch.no_grad():
            for i, p in enumerate(params):
                if p.grad is None:
                    continue
                buf = momentum[i]
                if buf is None:
                    buf = momentum[i] = p.grad.clone()
                else:
                    buf.mul_(0.5).add_(p.grad)
                p.add_(buf, alpha=-lr)
        if gamma:
            lr = lr * gamma
        losses.append(loss.item())
    return sum(losses) / len(losses), model.state_dict()


def run_train_epoch(student, batches, seed: int, lr: float, scheduler: str | None = None, gamma: float = 0.5):
    model = student.new("kit:tiny_translator", 9, 9, init=seed).train()
    opt = student.call("torch.optim:SGD", model.method("parameters"), kwargs={"lr": lr, "momentum": 0.5})
    loss_fn = student.new("torch.nn:CrossEntropyLoss", ignore_index=PAD_ID)
    sched = None
    if scheduler == "counting":
        sched = student.new("kit:counting_scheduler", opt)
    elif scheduler == "step":
        sched = student.call("torch.optim.lr_scheduler:StepLR", opt, 1, gamma)
    got = student.call(TRAIN_EPOCH, model, batches, opt, loss_fn, sched, grad=True)
    return got, model, sched


# greedy_decode ------------------------------------------------------------


def first_departure(local, src, ys, pad: int, eos: int) -> tuple[int, int, int] | None:
    """(row, position, the token the definition puts there) at the first place `ys` departs from greedy
    decoding on `local` (in eval mode), position by position in order; None where it does not. Each
    position is held to the argmax of local(src, ys[:, :t])[:, -1] on `ys`'s own tokens before it (the
    definition's, up to the first departure), or to `pad` in a row that has emitted `eos`."""
    done = torch.zeros(ys.size(0), dtype=torch.bool)
    with torch.no_grad():
        for t in range(1, ys.size(1)):
            want = local(src, ys[:, :t])[:, -1].argmax(-1).masked_fill(done, pad)
            wrong = torch.nonzero(ys[:, t] != want)
            if len(wrong):
                b = int(wrong[0, 0])
                return b, t, int(want[b])
            done |= ys[:, t] == eos
    return None


def decoded_length(ys, max_len: int, eos: int) -> int:
    """How many columns greedy decoding gives, for output `ys` that follows the definition: up to the
    column where the last row emits `eos`, or max_len."""
    done = torch.zeros(ys.size(0), dtype=torch.bool)
    for t in range(1, ys.size(1)):
        done |= ys[:, t] == eos
        if bool(done.all()):
            return t + 1
    return max_len


def check_greedy(student, src, max_len, seed=0, vocab=12, pad=PAD_ID, sos=SOS_ID, eos=EOS_ID, train_first=False):
    """The submission's greedy_decode on the kit's tiny model follows the definition, position by position
    (`first_departure`). Returns (the model, the submission's output cut to the definition's length)."""
    model = student.new("kit:tiny_translator", vocab, vocab, pad_idx=pad, sos_idx=sos, eos_idx=eos, init=seed)
    if train_first:
        model.train()
    got = student.call(GREEDY, model, src, max_len, sos, eos)
    local = TinyTranslator(vocab, vocab, pad_idx=pad, sos_idx=sos, eos_idx=eos, init=seed).eval()
    example = carrying(describe(src=src, max_len=max_len, sos_idx=sos, eos_idx=eos, pad_idx=pad),
                       seed=seed, vocab=vocab)  # the model's weights, for --repro
    got = expect_tensor(got, name="greedy_decode output", dtype=torch.long, example=example)
    B = src.size(0)
    shape_hint = ("The number of columns is off. Likely causes: not stopping once every row has emitted <eos>, "
                  "or not counting <sos> toward max_len.")
    if got.dim() != 2 or got.size(0) != B or not 1 <= got.size(1) <= max_len:
        raise Mismatch("greedy_decode output has the wrong shape", got=str(tuple(got.shape)), example=example,
                       expected=f"({B}, L) with 1 <= L <= max_len = {max_len}", hint=shape_hint)
    if not bool((got[:, 0] == sos).all()):
        raise Mismatch("every row should start with sos_idx", expected=f"column 0 all {sos}",
                       got=str(got[:, 0].tolist()), example=example,
                       hint="Column 0 is not sos_idx everywhere. Likely causes: starting from another id than the "
                            "sos_idx argument, or dropping the first column.")
    departs = first_departure(local, src, got, pad, eos)
    if departs is not None:
        b, t, want = departs
        if bool((got[b, 1:t] == eos).any()):
            what = f"row {b}, position {t} comes after that row's <eos>: it should be padding ({pad})"
            hint = ("A position after <eos> holds a token other than padding. Likely causes: finished rows are not "
                    "masked with model.pad_idx (the model keeps predicting after <eos>).")
        else:
            what = (f"row {b}, position {t} should be the argmax of the teacher-forced forward pass "
                    f"model(src, ys[:, :{t}])[{b}, {t - 1}]")
            hint = ("An emitted token differs from the eval-mode argmax at that position. Likely causes: the model "
                    "left in train mode while decoding (model.eval() missing; the kit's model predicts differently "
                    "in train mode), the argmax taken at another position than the last, or the new token not "
                    "fed back.")
        raise Mismatch(what, expected=f"{got[b, :t].tolist() + [want]} (up to position {t})",
                       got=str(got[b].tolist()),
                       found=Found(where=f"row {b}, position {t}"), example=example, hint=hint)
    length = decoded_length(got, max_len, eos)
    if got.size(1) < length:
        raise Mismatch("greedy_decode output has the wrong shape", got=str(tuple(got.shape)), example=example,
                       expected=f"({B}, {length}): a row has emitted no <eos> by column {got.size(1)}, so decoding "
                                f"goes on to max_len = {max_len}", hint=shape_hint)
    return model, got[:, :length]


def shows_the_mode(local, src, ys) -> bool:
    """Whether `local` in train mode would depart from `ys` (decoded in eval mode) somewhere: a decoder
    that forgot model.eval() gives other tokens (the kit's model changes in train mode)."""
    local.train()
    try:
        with torch.no_grad():
            return any(bool((local(src, ys[:, :t])[:, -1].argmax(-1) != ys[:, t]).any()) for t in range(1, ys.size(1)))
    finally:
        local.eval()


# the whole stack ----------------------------------------------------------

SMALL = dict(batch_size=32, d_model=32, n_heads=4, n_layers=1, d_ff=64, dropout=0.0, warmup=100, lr_scale=1.0,
             max_len=32)


def train_date_task(student, steps: int, n_train: int, n_test: int, target: float | None = None,
                    every: int = 100, timeout: float = 120.0) -> dict:
    """Train the submission's own stack in its process (grader.worker's train_date_task). With the
    reference's parts swapped in (grader.judging.attribution), each of their calls is a round trip to the grader:
    twice the time is allowed. `target`: stop at the first step, of every `every`th, whose exact match reaches it."""
    kwargs = dict(seed=0, steps=steps, n_train=n_train, n_test=n_test, **SMALL)
    if target is not None:
        kwargs.update(target=target, every=every)
    got = student._request({"op": "call", "target": "kit:train_date_task", "args": [], "kwargs": kwargs,
                            "seed": None, "grad": True, "device": None},
                           timeout=timeout * (2 if student.parts.allowed else 1))
    taken = len(got["losses"]) if type(got) is dict and isinstance(got.get("losses"), list) else None
    if taken is None or not (1 <= taken <= steps if target is not None else taken == steps):
        raise Mismatch("training did not record one loss per step", got=short(got),
                       expected=f"between 1 and {steps} losses" if target is not None else f"{steps} losses")
    return got
