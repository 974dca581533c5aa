"""The worker's requests that run the submission's code away from the plain CPU run: on another
device under watch.Placement (the device-placement checks), and timed beside torch's
built-ins (the performance feedback)."""

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch

from grader.sandbox.child import profile, protocol, record, state
from grader.sandbox.child.fixtures import SUBMISSION as PACKAGE
from grader.sandbox.child.placement import watch
from grader.sandbox.child.standins.swaps import resolve


class Placed:
    """A mixin of grader.sandbox.child.worker.Worker (its target, unwrap and watch)."""

    watch: record.Watch
    target: Callable[[dict], Any]
    unwrap: Callable[..., Any]

    def op_placed(self, req):
        """Run the target with its module, the modules among its arguments and its tensors moved to
        `device` ("meta" or a GPU), under watch.Placement: a CPU tensor that meets them is
        reported as `stray` instead of the output. Optionally under autocast (`autocast`: a dtype
        name) and through backward of sum(output * grad_output) (the parameters' gradients come back)."""
        device = str(req["device"])
        kind = device.partition(":")[0]
        if kind not in ("meta", "cuda", "cpu"):
            raise ValueError(f"no device {device[:20]!r}")
        if device == "meta":
            watch.warm()
        fn = self.target(req)
        module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
        plain = self.unwrap(req.get("args", [])), self.unwrap(req.get("kwargs", {}))
        args = self.unwrap(req.get("args", []), device)
        kwargs = self.unwrap(req.get("kwargs", {}), device)
        modules = [m for m in [module, *args, *kwargs.values()] if isinstance(m, torch.nn.Module)]
        grad_output = req.get("grad_output")
        # what the meta run cannot run (a value read) runs again with values: the modules' values kept first
        kept = watch.keep(modules) if kind == "meta" and grad_output is None and not req.get("autocast") \
            else None
        for m in modules:
            m.to(device)
        if isinstance(module, torch.nn.Module):
            module.zero_grad(set_to_none=True)
        cast = torch.autocast(kind, dtype=protocol.DTYPES[req["autocast"]]) if req.get("autocast") else nullcontext()
        placed = watch.Placement(kind, module if isinstance(module, torch.nn.Module) else None)
        if req.get("seed") is not None:
            state.seed(req["seed"])
        try:
            # on the CPU nothing can be stray: there the run is only run (the GPU tier with the CPU standing in)
            with torch.set_grad_enabled(grad_output is not None), self.watch, \
                    placed if kind != "cpu" else nullcontext():
                with cast:
                    out = fn(*args, **kwargs)
                if grad_output is not None and isinstance(out, torch.Tensor) and out.requires_grad:
                    (out.float() * grad_output.to(device)).sum().backward()
        except Exception as e:
            if placed.found is None:
                if kept is None or any(sign in str(e) for sign in watch.HOST_COPY):
                    raise
                return self._with_values(req, fn, module, kept, plain)
        except BaseException:
            if placed.found is None:
                raise
        if placed.found is not None:  # reported even when the submission caught the Stray
            return {"stray": placed.found}
        if kind == "meta" and not req.get("autocast"):
            found = self._on_a_second_device(req, fn, module, args, kwargs)
            if found is not None:
                return {"stray": {**found, "device": str(watch.SECOND)}}
        grads = None
        if grad_output is not None and isinstance(module, torch.nn.Module):
            grads = {n: p.grad for n, p in module.named_parameters()}
        outputs = watch.tensors_in(out)
        # where the submission made an output left on the CPU (an output buffer made without device=)
        made: list[str] = next((placed.origins[t] for t in outputs
                                if t.device.type == "cpu" and t in placed.origins), [])
        return {"output": out, "devices": [str(t.device) for t in outputs], "stray": None, "param_grads": grads,
                "made": made if kind != "cpu" else []}

    def _on_a_second_device(self, req, fn, module, args: list, kwargs: dict) -> dict | None:
        """The meta run again on a second device that is not `meta`: code that makes CPU tensors except
        where it sees `meta` meets them there (watch.on_a_second_device). The stray found, or None."""
        if req.get("seed") is not None:
            state.seed(req["seed"])
        with self.watch:
            return watch.on_a_second_device(lambda a, k: fn(*a, **k), module if isinstance(
                module, torch.nn.Module) else None, args, kwargs)

    def _with_values(self, req, fn, module, kept, plain: tuple[list, dict]) -> dict:
        """The meta run raised: the same call on a device that holds values (watch.with_values).
        A stray found there is reported; an error there is raised (the code does not run off the CPU)."""
        if req.get("seed") is not None:
            state.seed(req["seed"])
        with self.watch:
            found, out = watch.with_values(lambda a, k: fn(*a, **k), module if isinstance(
                module, torch.nn.Module) else None, kept, *plain)
        if found is not None:
            return {"stray": {**found, "device": str(watch.SECOND)}}
        outputs = watch.tensors_in(out)
        return {"output": out, "devices": [str(t.device) for t in outputs], "stray": None, "param_grads": None,
                "made": []}

    def op_profile(self, req):
        """Forward and backward of the submission's `target` and of torch's built-in of that `kind`,
        timed here (grader.sandbox.child.profile). Not watched for forbidden APIs: torch's built-ins
        run here on purpose, and the submission's code was watched in its checks."""
        if req["kind"] not in profile.KINDS:
            raise ValueError(f"no kind {str(req['kind'])[:40]!r}")
        shape = {k: int(req["shape"][k]) for k in profile.SHAPE}
        device, repeat = str(req["device"]), max(1, min(int(req["repeat"]), 50))
        own = profile.measure(req["kind"], resolve(PACKAGE, req["target"]), device, repeat, shape)
        return {"student": own, "torch": profile.measure(req["kind"], None, device, repeat, shape)}
