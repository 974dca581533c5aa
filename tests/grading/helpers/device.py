"""The same component on another device: where its tensors are made, and what a GPU computes.

check_device_placement (public tier, every machine): the module and its inputs move to PyTorch's
`meta` device (shapes and dtypes, no data), where a tensor made on the CPU that meets them stops
the run as it would on a GPU (grader.sandbox.child.placement.watch); the report names the line that
made it and the line where they met. The worker then runs it again on fake tensors that say they
are on another device (`lazy:0`), so that code making CPU tensors except where it sees `meta`
meets them too; code that meta cannot run (it reads a value) runs on `lazy:0` with its values.

check_on_gpu and check_under_autocast (the GPU tier, tests/grading/cuda/): on the GPU the same
module gives what it gives on the CPU, at float32 tolerance, with its outputs on the GPU; under
bf16 and fp16 autocast it stays finite and close. Each compares the submission with itself on
the CPU, so that a bug the CPU shows costs marks in the CPU's checks only.
"""

import re
from dataclasses import dataclass, field

import torch

from grader.findings import Frame
from grader.sandbox.host import StudentError
from grader.suite.checks import Compare, Found, Mismatch, assert_close, describe
from grader.suite.placement import How
from tests import strategies as s

PLACEMENT_HINT = ("Make every tensor that forward creates on the device of its inputs: torch.ones(T, T, "
                  "device=x.device), torch.zeros_like(x), x.new_ones(T, T); keep fixed tables as buffers "
                  "(self.register_buffer) so that .to(device) moves them; never write .cuda() or .cpu(). "
                  "This check runs your code on PyTorch's meta device, where the same mistake shows on any machine.")
# what torch says when meta code asks for a host copy (.cpu(), .tolist(), .to("cpu"); .numpy(), np.asarray); the
# worker does not run these again with values (grader.sandbox.child.placement.watch.HOST_COPY)
HOST_COPY = ("Cannot copy out of meta tensor", "can't convert meta device type tensor to numpy")
AUTOCAST_TOLERANCE = {"bfloat16": 0.1, "float16": 0.02}  # of the output's scale: 8 and 11 bits of mantissa
HALF_HINT = ("Half precision overflows where float32 does not. Likely causes: a constant too large for it (-1e9 "
             "does not fit float16, whose largest value is 65504: fill with torch.finfo(scores.dtype).min), or a "
             "sum of squares or exp() taken in half precision.")


@dataclass
class Case:
    """What to run: `target(*args, **kwargs)` then called on `inputs` (a class), or
    `target(*inputs, **call_kwargs)` (a function); `device_kwarg` names an argument that says where
    to build (make_causal_mask's `device`). A module keeps its own (seeded) initialisation: it is
    compared with itself, so its parameters' names do not matter here."""
    target: str
    inputs: tuple
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    call_kwargs: dict = field(default_factory=dict)
    device_kwarg: str | None = None
    function: bool = False

    @property
    def example(self) -> str:
        return describe(**{f"input{i}": x for i, x in enumerate(self.inputs)}, args=self.args, kwargs=self.kwargs)


def stored_case(c: dict) -> Case:
    """A stored case of the public tier (tests.grading.support.stored) as a Case."""
    function = not c["state"]
    inputs = (*c["args"], *c["inputs"]) if function else tuple(c["inputs"])
    return Case(c["target"], inputs, () if function else tuple(c["args"]), {} if function else dict(c["kwargs"]),
                dict(c["kwargs"]) if function else {}, function=function)


def _build(student, case: Case):
    """The target to call: the function's name, or a fresh module in eval() mode."""
    if case.function:
        return case.target
    return student.new(case.target, *case.args, **case.kwargs).eval()


def _on_cpu(student, target, case: Case):
    kwargs = {**case.call_kwargs, **({case.device_kwarg: "cpu"} if case.device_kwarg else {})}
    if isinstance(target, str):
        return student.call(target, *case.inputs, kwargs=kwargs)
    return target.run(None, case.inputs, kwargs)


def _placed(student, target, case: Case, device: str, how: How = How()) -> dict:
    kwargs = {**case.call_kwargs, **({case.device_kwarg: torch.device(device)} if case.device_kwarg else {})}
    return student.placed(target, *case.inputs, to=device, kwargs=kwargs, how=how)


def _leaves(v) -> list:
    if isinstance(v, torch.Tensor):
        return [v]
    if type(v) in (list, tuple):
        return [t for x in v for t in _leaves(x)]
    return []


FILE_SHOWN = 40  # characters of a frame's file: the watch writes it relative to the submission (assignment2/masks.py)


def _frame(frame: str) -> str:
    """"file:line" of a frame; a longer file than the watch writes (the worker's say-so: a path into the
    kit, long or short with the machine's folders) keeps its tail, so that the report's length is the
    same on every machine."""
    file, sep, line = frame.split(" in ")[0].rpartition(":")
    if len(file) > FILE_SHOWN:
        file = "…" + file[-(FILE_SHOWN - 1):]
    return f"{file}{sep}{line}" if sep else line[:FILE_SHOWN]


def _shown(frame: str) -> str:
    """A whole frame for the report's `where`: its file as _frame bounds it, the rest to a line's worth."""
    head, sep, rest = frame.partition(" in ")
    return f"{_frame(head)}{sep}{rest[:FRAME_SHOWN]}"


FRAME_SHOWN = 120  # characters of a frame past its file: the function and its line of code
NAME_SHOWN = 40  # characters of the function the watch names (an identifier; the worker's say-so)


# a frame as the worker's watch writes it (grader.sandbox.child.record.student_frames):
# "assignment2/masks.py:27 in make_causal_mask: <the line>"
_FRAME = re.compile(r"(\S+):([0-9]{1,9}) in (\S+): (.*)")
MAX_FRAMES = 6  # the watch sends 4 at most (student_frames' limit); the rest of a longer chain is not read


def chain(made: list) -> tuple[Frame, ...]:
    """The frames that made a stray CPU tensor, the maker first, as data for the diagnosis (the Mismatch's
    `made`); none where one of them is not a frame as the watch
    writes it (the worker's say-so: the diagnosis then names no line)."""
    found = [_FRAME.fullmatch(f) if isinstance(f, str) else None for f in made[:MAX_FRAMES]] \
        if isinstance(made, list) else []
    if not found or not all(found):
        return ()
    return tuple(Frame(m[1], int(m[2]), m[3], m[4]) for m in found if m)


def expect_no_stray(answer: dict, *, component: str, device: str, example: str, hint: str = ""):
    """The placed run met no CPU tensor; the report says which tensor did, and where."""
    stray = answer.get("stray")
    if not stray:
        return
    made, met = stray.get("created") or [], stray.get("met") or []
    if made:
        # the line that made it, and the one that called it there (make_causal_mask(T) without a device)
        origin = f"made at {_frame(made[0])}" + (f", called from {_frame(made[1])}" if len(made) > 1 else "")
        where = "\n".join([f"made at {_shown(made[0])}", *(f"  called from {_shown(f)}" for f in made[1:])])
    elif stray.get("attribute"):
        origin = f"self.{stray['attribute']}, a plain tensor attribute that .to(device) does not move"
        where = f"self.{stray['attribute']} is a tensor attribute, not a buffer or parameter"
    else:
        origin, where = "of unknown origin", ""
    where += "".join(f"\n{'met at' if i == 0 else '  called from'} {_shown(f)}" for i, f in enumerate(met))
    at = f" at {_frame(met[0])}" if met else ""
    if stray.get("device"):  # the worker's second run, on fake tensors on another device than meta
        device = f"a second device ({str(stray['device'])[:20]}, simulated: code that tests for meta meets it)"
    device = "the meta device" if device == "meta" else device
    raise Mismatch(f"{component} mixes devices: a CPU tensor ({origin}) meets tensors on {device} in "
                   f"{str(stray.get('function'))[:NAME_SHOWN]}(){at}",
                   expected=f"every tensor of the computation on {device}, where the inputs are",
                   got=f"a tensor on the CPU ({origin})",
                   found=Found(where=where.strip(), made=chain(made)), example=example,
                   hint=f"{hint} {PLACEMENT_HINT}".strip())


def expect_on(answer: dict, device: str, *, component: str, example: str, hint: str = ""):
    """Every tensor the run returned is on `device` (its type: "cuda" for "cuda:0")."""
    devices = answer.get("devices") or []
    wrong = [d for d in devices if d.partition(":")[0] != device.partition(":")[0]]
    if wrong:
        made = answer.get("made") or []  # the submission's line that made it there, when it did
        origin = f" (made at {_frame(made[0])})" if made else ""
        raise Mismatch(f"{component} returns a tensor on {wrong[0]}{origin} when its inputs are on {device}",
                       expected=f"outputs on {device}", got=f"devices {', '.join(devices)}", example=example,
                       found=Found(where="\n".join([f"made at {_shown(made[0])}",
                                                     *(f"  called from {_shown(f)}" for f in made[1:])])
                                   if made else "", made=chain(made)),
                       hint=f"{hint} {PLACEMENT_HINT}".strip())


def check_device_placement(student, case: Case, *, component: str, hint: str = ""):
    """The component, run on the meta device, keeps every tensor there and returns what the CPU
    returns (shapes and dtypes). Code that copies a tensor to the host (.cpu(), .tolist(), .numpy())
    fails: on a GPU that is where its device bugs start. Where the meta device cannot run the code
    (it reads a value: .item(), `if mask.any()`), the worker runs it again on a second device that
    holds the values (grader.sandbox.child.placement.held), as a GPU would, and that run decides: an error there
    fails the check, since the code ran on the CPU (issue 51: an error on meta was once taken for
    "reads a value: nothing judged", which code could raise on purpose off the CPU)."""
    target = _build(student, case)
    expected = _leaves(_on_cpu(student, target, case))  # a stub is "not attempted" here
    try:
        answer = _placed(student, target, case, "meta")
    except StudentError as e:
        if any(sign in e.message for sign in HOST_COPY):
            raise Mismatch(f"{component} copies a tensor to the host (.cpu(), .tolist() or .numpy()) in forward",
                           expected="the computation kept on the inputs' device",
                           got=f"{e.type}: {e.message}"[:300],
                           found=Found(where="\n".join(e.where)), example=case.example,
                           hint=f"{hint} Build masks and tables with tensor operations on the inputs' device "
                                "(tokens != pad_idx, torch.ones(T, T, device=x.device).tril()), not in Python "
                                f"lists or NumPy. {PLACEMENT_HINT}".strip()) from None
        raise Mismatch(f"{component} raises off the CPU, where on the CPU it ran",
                       expected="the same computation on any device",
                       got=f"{e.type}: {e.message}"[:300],
                       found=Found(where="\n".join(e.where)), example=case.example,
                       hint=f"{hint} Code that checks or assumes the CPU (x.device.type == 'cpu', a fixed "
                            f"device) fails off it. {PLACEMENT_HINT}".strip()) from None
    expect_no_stray(answer, component=component, device="meta", example=case.example, hint=hint)
    expect_on(answer, "meta", component=component, example=case.example, hint=hint)
    got = _leaves(answer["output"])
    shapes = [(tuple(t.shape), t.dtype) for t in got]
    if shapes != [(tuple(t.shape), t.dtype) for t in expected]:
        raise Mismatch(f"{component} returns other shapes or dtypes on the meta device than on the CPU",
                       expected=str([(tuple(t.shape), str(t.dtype)) for t in expected]),
                       got=str([(shape, str(dtype)) for shape, dtype in shapes]), example=case.example,
                       hint=hint or "Likely causes: a shape or dtype taken from a tensor made on the CPU.")


def check_on_gpu(student, case: Case, *, component: str, grad: bool = True, atol: float = 1e-4,
                 rtol: float = 1e-4, hint: str = ""):
    """On the GPU tier's device, with the module moved by .to(device) and the inputs there: no CPU
    tensor meets them, the outputs are there and match the CPU's at float32 tolerance; with `grad`,
    so do the parameters' gradients."""
    gpu = student.gpu
    target = _build(student, case)
    expected = _on_cpu(student, target, case)
    grad_output = cpu_grads = None
    if grad and not isinstance(target, str) and isinstance(expected, torch.Tensor) and expected.is_floating_point():
        grad_output = s.tensor(expected.shape, 7)
        _, _, cpu_grads = target.backward(*case.inputs, grad_output=grad_output, wrt=(), kwargs=case.call_kwargs)
    answer = _placed(student, target, case, gpu, How(grad_output=grad_output))
    expect_no_stray(answer, component=component, device=gpu, example=case.example, hint=hint)
    expect_on(answer, gpu, component=component, example=case.example, hint=hint)
    for i, (got, want) in enumerate(zip(_leaves(answer["output"]), _leaves(expected), strict=True)):
        assert_close(got, want, name=f"{component} output {i} on {gpu} compared with the CPU's",
                     compare=Compare(atol=atol, rtol=rtol),
                     example=case.example,
                     hint=hint or "Likely causes: a computation that depends on the device (a random draw, an "
                                  "uninitialised torch.empty), or TF32 matmuls switched on "
                                  "(torch.backends.cuda.matmul.allow_tf32).")
    for name, want in sorted((cpu_grads or {}).items()):
        got = (answer.get("param_grads") or {}).get(name)
        if want is not None:
            assert_close(got, want, name=f"gradient of {name} on {gpu} compared with the CPU's",
                         compare=Compare(atol=atol * max(1.0, float(want.abs().max())), rtol=rtol),
                         example=case.example,
                         hint=hint or "Likely causes: part of the graph cut on the GPU only (.cpu(), .item()).")


def check_under_autocast(student, case: Case, *, component: str, hint: str = ""):
    """Under torch.autocast with bfloat16 and with float16 on the GPU tier's device, the outputs
    stay finite and within AUTOCAST_TOLERANCE of the float32 output on the CPU (of its scale)."""
    gpu = student.gpu
    target = _build(student, case)
    expected = _leaves(_on_cpu(student, target, case))
    for dtype, tolerance in AUTOCAST_TOLERANCE.items():
        try:
            answer = _placed(student, target, case, gpu, How(autocast=dtype))
        except StudentError as e:  # what float32 runs, half precision may refuse: said as a failure, with why
            if e.not_attempted:
                raise
            raise Mismatch(f"{component} raises {e.type} under {dtype} autocast: {e.message}"[:200],
                           got=f"{e.type}: {e.message}"[:300],
                           expected=f"the float32 result, to {dtype}'s precision",
                           found=Found(where="\n".join(e.where)),
                           example=case.example, hint=hint or HALF_HINT) from None
        expect_no_stray(answer, component=component, device=gpu, example=case.example, hint=hint)
        for i, (got, want) in enumerate(zip(_leaves(answer["output"]), expected, strict=True)):
            if not want.is_floating_point():
                continue
            if type(got) is not torch.Tensor or not bool(torch.isfinite(got.float()).all()):
                raise Mismatch(f"{component} output {i} is not finite under {dtype} autocast",
                               expected="finite values", got="NaN or inf", example=case.example,
                               hint=hint or HALF_HINT)
            scale = max(1.0, float(want.abs().max()))
            assert_close(got.float(), want.float(), name=f"{component} output {i} under {dtype} autocast",
                         compare=Compare(atol=tolerance * scale, rtol=tolerance), example=case.example,
                         hint=hint or f"Far from the float32 output for {dtype}'s precision. Likely causes: a "
                                      "reduction (mean, variance, softmax) done in half precision.")
