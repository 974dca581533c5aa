"""The device-placement verdict, confirmed in the grader (issue 43: verdicts judged in the grader).

Whether a CPU tensor met the device is seen by the kit's watch (grader.sandbox.child.placement.watch),
which runs in the submission's process: a submission can replace it there, and a device bug then
shows as an error that the placement checks do not judge (code that cannot run on `meta`) or as
nothing at all. The grader cannot see the stray itself, so it checks the watch: after every placed
run that found no stray, the same request runs the kit's probe, a function that makes a CPU tensor
and meets the inputs with it; a watch that does not report the probe's stray was changed, and the
check fails for it. What the grader can read itself, it reads: the devices of a `meta` run's
outputs are those of the tensors as they arrive (a meta tensor travels as meta), not the worker's
list of them.
"""

from dataclasses import dataclass

import torch

from grader.sandbox.host import StudentError
from grader.suite.checks import Mismatch
from grader.trim import inert

PROBE = "kit:placement_probe"  # grader.sandbox.child.placement.watch.probe
# What the answer's words may hold: an honest watch sends 4 frames of a chain at most, each cut to 300
# characters (grader.sandbox.child.record.student_frames); a function's name, a dotted attribute, a device.
# A replaced watch sends what it likes (megabytes of frames, escapes, markup): kept to these here, where
# it enters, before the checks word it into a message, `where` and `made` (issue 43's channel table).
FRAMES, FRAME_CHARS, NAME_CHARS = 4, 300, 60


@dataclass(frozen=True)
class How:
    """How a placed run runs (grader.suite.remote.Submission.placed): under autocast to `autocast` (a
    dtype's name), through backward of sum(output * grad_output) where `grad_output` is given, seeded
    with `seed` where given."""

    autocast: str | None = None
    grad_output: torch.Tensor | None = None
    seed: int | None = None


def tensors_in(v) -> list[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in tensors_in(x)]
    if type(v) is dict:
        return [t for x in v.values() for t in tensors_in(x)]
    return []


def confirmed(student, request: dict) -> dict:
    """`request` (an op "placed") sent through `student` (grader.suite.remote.Submission), its answer
    confirmed: a watch that misses the probe's stray fails the check (Mismatch), and a meta run's
    output devices are read from its tensors."""
    kind = str(request["device"]).partition(":")[0]
    try:
        answer = student._request(request)
    except StudentError:  # what a replaced watch lets through may end in an error the check does not judge
        if kind != "cpu":
            _probe(student, request["device"])
        raise
    if not isinstance(answer, dict):
        raise Mismatch("the placed run's answer is not a report", expected="a dict", got=type(answer).__name__)
    answer = bounded(answer)
    if kind != "cpu" and not answer.get("stray"):
        _probe(student, request["device"])
        if kind == "meta":
            answer["devices"] = [str(t.device) for t in tensors_in(answer.get("output"))]
    return answer


def _frames(value) -> list[str]:
    """A chain of frames as the watch writes them, bounded and one line each; [] where it is not a
    list of strings (the checks then name no line)."""
    if not isinstance(value, list) or not all(isinstance(f, str) for f in value[:FRAMES]):
        return []
    return [inert(f, FRAME_CHARS, line=True) for f in value[:FRAMES]]


def bounded(answer: dict) -> dict:
    """A placed run's answer with its words (the stray's function, attribute, device and frames; the
    output's devices and the frames that made them) kept to what an honest watch sends; tensors as
    they came."""
    answer = dict(answer)
    stray = answer.get("stray")
    if stray:
        stray = stray if isinstance(stray, dict) else {}
        answer["stray"] = {"function": inert(stray.get("function") or "", NAME_CHARS, line=True),
                           "attribute": inert(stray.get("attribute") or "", NAME_CHARS, line=True),
                           "created": _frames(stray.get("created")), "met": _frames(stray.get("met")),
                           **({"device": inert(stray["device"], NAME_CHARS, line=True)} if stray.get("device")
                              else {})}
    if "made" in answer:
        answer["made"] = _frames(answer["made"])
    if isinstance(answer.get("devices"), list):
        answer["devices"] = [inert(d, NAME_CHARS, line=True) for d in answer["devices"][:64] if isinstance(d, str)]
    return answer


def _probe(student, device) -> None:
    request = {"op": "placed", "target": PROBE, "method": None, "args": [torch.zeros(2, 3)], "kwargs": {},
               "device": device, "autocast": None, "grad_output": None, "seed": None}
    try:
        answer = student._request(request)
    except StudentError:
        answer = None
    if not (isinstance(answer, dict) and answer.get("stray")):
        raise Mismatch("the kit's device-placement watch in your code's process was changed: it no longer "
                       "sees a CPU tensor meet a tensor on the device, so this check cannot judge placement",
                       expected="the kit's probe (a CPU tensor times the inputs) reported as a stray",
                       got="no stray reported" if answer is not None else "an error instead of the stray",
                       hint="Do not reach into the grader's modules (sys.modules, gc, frames) from your code.")
