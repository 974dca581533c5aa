"""Worker side of the forbidden-API check: a record of forbidden torch APIs the submission runs.

course.toml lists, per component, what students must not call (`forbidden`); the grader sends
the names with each import request. While the worker runs the submission's code, a
TorchFunctionMode sees every torch function by the object called, however the code named it
(`F.layer_norm`, `getattr(F, "layer" + "_norm")`, `torch.layer_norm`, nn.LayerNorm's forward),
and knows the aten operators that do a forbidden API's work (torch.ops.aten.native_layer_norm, by any
alias or computed name, is the operator object the mode sees: `ATEN`),
and a global forward pre-hook sees forbidden nn.Module classes run (nn.TransformerEncoderLayer's
fast path calls no forbidden function). A hit is kept with the line of the submission's file
that made the call; the grader (grader.judging.forbidden) decides what it costs. Nothing here is
believed: it is right for code that leaves it alone, and the grader's source scan flags the
tools that would not.

A TorchFunctionMode holds in the thread that pushed it only: a thread started while a watch is
on (threading, concurrent.futures, _thread) runs under a relay of that watch, so a forbidden API
run outside the request's own thread is recorded too. What runs in another process (a fork, a
multiprocessing pool) is not seen here.
"""

import _thread
import inspect
import linecache
import os
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType

import torch
from torch.overrides import TorchFunctionMode

from grader.sandbox.child.fixtures import SUBMISSION

_HERE = Path(__file__).resolve()
_KIT = f"{_HERE.parents[2]}{os.sep}"  # the kit's own code in this process (fixtures, stand-ins)
_STUDENT = f"{_HERE.parents[3] / SUBMISSION}{os.sep}"
_MAX_HITS = 64  # one hit already costs the component everything: keep the answer small


# The aten operators whose kernels do a forbidden API's work, by the API's course name. Reached through
# torch.ops (an alias, operator.attrgetter, a computed name: each call lands on the operator object,
# which the mode sees), they are recorded as the API. Not for the classes that only the forward hook
# watches (assignment3's): the mode is pushed only where a function is watched (its cost)
_LAYER_NORM = ("aten::layer_norm", "aten::native_layer_norm")
_SDPA = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
         "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
         "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
         "aten::_scaled_dot_product_attention_math_for_mps", "aten::_fused_sdp_choice")
ATEN = {"torch.nn.LayerNorm": _LAYER_NORM, "torch.nn.functional.layer_norm": _LAYER_NORM,
        "torch.layer_norm": _LAYER_NORM, "torch.native_layer_norm": _LAYER_NORM,
        "torch.nn.functional.scaled_dot_product_attention": _SDPA,
        "torch.nn.MultiheadAttention": ("aten::_native_multi_head_attention",),
        "torch.nn.functional.multi_head_attention_forward": ("aten::_native_multi_head_attention",)}


def _operator(func) -> str:
    """"aten::native_layer_norm" for torch.ops.aten.native_layer_norm and its overloads; "" for the rest."""
    if isinstance(func, torch._ops.OpOverloadPacket):
        return func._qualified_op_name
    if isinstance(func, torch._ops.OpOverload):
        return func.name()
    return ""


def _resolve(name: str):
    """"torch.nn.functional.layer_norm" -> the object (None if this torch has no such name)."""
    obj: object = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj if name.startswith("torch.") else None


class Watch(TorchFunctionMode):
    """Active while a request runs the submission's code; `hits` is [[name, file, line, scope]]."""

    def __init__(self):
        super().__init__()
        self.functions: dict[int, tuple[str, str]] = {}  # id(function) -> (course name, keyword or "")
        self.alive: list[object] = []  # the functions behind those ids: no other object can take their id
        self.classes: dict[type, str] = {}
        self.operators: dict[str, str] = {}  # "aten::native_layer_norm" -> course name (ATEN)
        self.hits: list[list] = []
        self.depth = 0
        self.active = False  # whether the outermost entry pushed the mode (no function watched: not pushed)
        self.hook = None

    def watch(self, names: list[str]) -> None:
        """`names` as course.toml spells them: "torch.nn.LayerNorm", "torch.nn.functional.f(keyword)"."""
        for name in names:
            path, _, keyword = name.partition("(")
            obj = _resolve(path)
            if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
                if not keyword:  # with one (CrossEntropyLoss(label_smoothing)), its forward's function is watched
                    self.classes[obj] = name
            elif callable(obj):
                self.functions[id(obj)] = (name, keyword.rstrip(")"))
                self.alive.append(obj)
            if not keyword:
                self.operators.update(dict.fromkeys(ATEN.get(path, ()), name))

    def __enter__(self):
        global _ON
        # re-entered when the grader calls back into the worker in the middle of a request
        self.depth += 1
        if self.depth == 1:
            if self.classes:
                self.hook = torch.nn.modules.module.register_module_forward_pre_hook(self._module_runs)
            # every torch call goes through the mode (1.4x on small tensors): pushed only when a
            # function is watched, not for classes alone (assignment3's), which the hook sees
            if self.functions:
                super().__enter__()
                self.active = True
                _ON = self
        return self

    def __exit__(self, *exc):
        global _ON
        self.depth -= 1
        if self.depth == 0:
            if self.hook is not None:
                self.hook.remove()
                self.hook = None
            if self.active:
                self.active = False
                _ON = None
                super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        hit = self.functions.get(id(func))
        if hit is None and self.operators and type(func).__module__ == "torch._ops":
            named = self.operators.get(_operator(func))
            hit = (named, "") if named else None
        if hit is not None and (not hit[1] or _given(func, hit[1], args, kwargs)):
            relay = _relay_of()
            self._note(hit[0], relay.origin if relay is not None else None)
        return func(*args, **kwargs)

    def _module_runs(self, module, args):
        if isinstance(module, tuple(self.classes)):  # every module call comes here: the common case first
            for cls, name in self.classes.items():
                if isinstance(module, cls):
                    self._note(name)

    def _note(self, name: str, origin: list | None = None) -> None:
        """Keep the hit if the submission's code made the call: the first frame out of torch and the
        standard library decides; the kit's fixtures and stand-ins are not the student's. In a thread
        the submission started, with none of its frames (a pool called torch's function itself),
        the code that started the thread made the call (`origin`)."""
        found = _first_student_frame(sys._getframe(2))
        if found is None and origin is not None:
            found = origin
        if found is not None and found != "kit" and len(self.hits) < _MAX_HITS:
            self.hits.append([name, *found])

    def take(self) -> list[list]:
        hits, self.hits = self.hits, []
        return hits


def _first_student_frame(frame: FrameType | None):
    """[file, line, scope] of the submission's first frame from `frame` outward, "kit" where the kit's
    own code (outside this module) comes first, None where neither does."""
    while frame is not None:
        file = os.path.realpath(frame.f_code.co_filename)
        if file.startswith(_STUDENT):
            return [file[len(_STUDENT):], frame.f_lineno, frame.f_code.co_qualname]
        if file.startswith(_KIT) and file != str(_HERE):
            return "kit"
        frame = frame.f_back
    return None


class _Relay(TorchFunctionMode):
    """A watch's mode in a thread the submission started while the watch was on; `origin`: where."""

    def __init__(self, watch: Watch, origin):
        super().__init__()
        self.watch, self.origin = watch, origin

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.watch.__torch_function__(func, types, args, kwargs)


_ON: Watch | None = None  # the watch whose mode is pushed, while a request runs the submission's code
_RELAYS = threading.local()


def _relay_of() -> "_Relay | None":
    return getattr(_RELAYS, "relay", None)


def _relayed(function):
    watch = _ON
    if watch is None:
        return function
    origin = _first_student_frame(sys._getframe(2))

    def run(*args, **kwargs):
        relay = _RELAYS.relay = _Relay(watch, origin if isinstance(origin, list) else None)
        with relay:
            return function(*args, **kwargs)
    return run


def _starting(start):
    def start_thread(function, *args, **kwargs):
        return start(_relayed(function), *args, **kwargs)
    start_thread.__wrapped__ = start  # type: ignore[attr-defined]
    return start_thread


# every way Python starts a thread ends in one of these; threading keeps its own reference
for _module, _name in ((_thread, "start_new_thread"), (_thread, "start_new"), (_thread, "start_joinable_thread"),
                       (threading, "_start_new_thread"), (threading, "_start_joinable_thread")):
    if hasattr(_module, _name) and not hasattr(getattr(_module, _name), "__wrapped__"):
        setattr(_module, _name, _starting(getattr(_module, _name)))


# the kit's frames that only pass a call on to the submission's own code (the wrappers its parts are
# behind in a composite's checks, grader.sandbox.child.standins.standin.Link.wrap): a walk goes through them
_PASS_THROUGH: set[CodeType] = set()


def passes_through(code: CodeType) -> None:
    """Let the walk of student_frames go through the kit's `code`, which only calls the submission on."""
    _PASS_THROUGH.add(code)


def student_frames(frame: FrameType | None, limit: int = 4) -> list[str]:
    """The submission's frames on the stack from `frame` outward, innermost first, as
    "assignment2/masks.py:27 in make_causal_mask: <the line>"; the kit's code ends the walk
    (but for those it passes_through)."""
    found: list[str] = []
    while frame is not None and len(found) < limit:
        file = os.path.realpath(frame.f_code.co_filename)
        if file.startswith(_KIT) and frame.f_code not in _PASS_THROUGH:
            break
        if file.startswith(_STUDENT):
            line = linecache.getline(file, frame.f_lineno).strip()
            found.append(f"{file[len(_STUDENT):]}:{frame.f_lineno} in {frame.f_code.co_qualname}: {line}"[:300])
        frame = frame.f_back
    return found


def _given(func, keyword: str, args, kwargs) -> bool:
    """Whether `keyword` has a value other than its default in this call (by name or by position)."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return keyword in kwargs
    param = bound.signature.parameters.get(keyword)
    if param is None or keyword not in bound.arguments:
        return False
    try:
        return bool(bound.arguments[keyword] != param.default)
    except Exception:  # a value that cannot be compared (a tensor of several numbers) is given all the same
        return True
