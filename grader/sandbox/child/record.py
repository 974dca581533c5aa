"""Worker side of the forbidden-API check: a record of forbidden torch APIs the submission runs.

course.toml lists, per component, what students must not call (`forbidden`); the grader sends
the names with each import request. While the worker runs the submission's code, a
TorchFunctionMode sees every torch function by the object called, however the code named it
(`F.layer_norm`, `getattr(F, "layer" + "_norm")`, `torch.layer_norm`, nn.LayerNorm's forward),
and a global forward pre-hook sees forbidden nn.Module classes run (nn.TransformerEncoderLayer's
fast path calls no forbidden function). A hit is kept with the line of the submission's file
that made the call; the grader (grader.forbidden) decides what it costs. Nothing here is
believed: it is right for code that leaves it alone, and the grader's source scan flags the
tools that would not.
"""

import inspect
import linecache
import os
import sys
from pathlib import Path
from types import FrameType

import torch
from torch.overrides import TorchFunctionMode

from grader.sandbox.child.fixtures import SUBMISSION

_HERE = Path(__file__).resolve()
_KIT = f"{_HERE.parents[2]}{os.sep}"  # the kit's own code in this process (fixtures, stand-ins)
_STUDENT = f"{_HERE.parents[3] / SUBMISSION}{os.sep}"
_MAX_HITS = 64  # one hit already costs the component everything: keep the answer small


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

    def __enter__(self):
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
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        if self.depth == 0:
            if self.hook is not None:
                self.hook.remove()
                self.hook = None
            if self.active:
                self.active = False
                super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        hit = self.functions.get(id(func))
        if hit is not None and (not hit[1] or _given(func, hit[1], args, kwargs)):
            self._note(hit[0])
        return func(*args, **kwargs)

    def _module_runs(self, module, args):
        if isinstance(module, tuple(self.classes)):  # every module call comes here: the common case first
            for cls, name in self.classes.items():
                if isinstance(module, cls):
                    self._note(name)

    def _note(self, name: str) -> None:
        """Keep the hit if the submission's code made the call: the first frame out of torch and the
        standard library decides; the kit's fixtures and stand-ins are not the student's."""
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            file = os.path.realpath(frame.f_code.co_filename)
            if file.startswith(_STUDENT):
                if len(self.hits) < _MAX_HITS:
                    self.hits.append([name, file[len(_STUDENT):], frame.f_lineno, frame.f_code.co_qualname])
                return
            if file.startswith(_KIT):
                return
            frame = frame.f_back

    def take(self) -> list[list]:
        hits, self.hits = self.hits, []
        return hits


def student_frames(frame: FrameType | None, limit: int = 4) -> list[str]:
    """The submission's frames on the stack from `frame` outward, innermost first, as
    "assignment2/masks.py:27 in make_causal_mask: <the line>"; the kit's code ends the walk."""
    found: list[str] = []
    while frame is not None and len(found) < limit:
        file = os.path.realpath(frame.f_code.co_filename)
        if file.startswith(_KIT):
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
