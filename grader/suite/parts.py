"""The reference's parts, served to the stand-ins in the submission's process.

An isolated check swaps the reference's versions of a composite's parts in for the
submission's own; the stand-ins (grader.sandbox.child.standins) ask for them here.
"""

import torch

from grader.sandbox.child import protocol
from grader.suite.reference import PACKAGE, load, resolve


class ReferenceParts:
    """Answers the worker's stand-ins (grader.parts): builds and runs the reference's parts.

    Only the parts swapped in by the current check are served, with bounded sizes, since
    the requests come from the submission's process."""

    MAX_INT = 10_000
    MAX_NUMEL = 20_000_000

    def __init__(self, call_back):
        self.call_back = call_back  # (handle, *args) -> what the submission's callable returns
        self.allowed: set[str] = set()
        self.built: dict[int, torch.nn.Module] = {}
        self.package = PACKAGE

    def allow(self, reference, parts):
        if reference is not None:
            self.package = load(reference)
        self.allowed = set(parts)
        self.built.clear()

    def _target(self, part):
        if part not in self.allowed:
            raise ValueError(f"{part!r} is not a part of this check")
        return resolve(self.package, part)

    def answer(self, message: dict):
        if not isinstance(message, dict):
            raise ValueError("malformed request")
        args, kwargs = message.get("args", []), message.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ValueError("malformed arguments")
        args = [self._callable(a) for a in args]
        kwargs = {k: self._callable(v) for k, v in kwargs.items()}
        if "build" in message:
            if any(type(v) is int and abs(v) > self.MAX_INT for v in [*args, *kwargs.values()]):
                raise ValueError(f"sizes above {self.MAX_INT} are not served")
            torch.manual_seed(0)
            module = self._target(message["build"])(*args, **kwargs)
            if sum(t.numel() for t in module.state_dict().values()) > self.MAX_NUMEL:
                raise ValueError("part too large")
            self.built[len(self.built) + 1] = module
            return {"id": len(self.built), "parameters": {k: v.detach() for k, v in module.named_parameters()},
                    "buffers": dict(module.named_buffers())}
        if "forward" in message:
            module = self.built[message["forward"]]
            with torch.no_grad():
                module.load_state_dict(message["state"])
                module.train(bool(message.get("training")))
                output = module(*args, **kwargs)
            attrs = {k: v for k, v in vars(module).items() if isinstance(v, torch.Tensor) and not k.startswith("_")}
            return {"output": output, "attrs": attrs}
        if "call" in message:
            with torch.no_grad():
                return {"output": self._target(message["call"])(*args, **kwargs)}
        raise ValueError("unknown request")

    def _callable(self, v):
        if isinstance(v, protocol.Handle):
            return lambda *args: self.call_back(v, *args)
        return v
