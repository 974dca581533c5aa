"""The process-wide state a submission can change, put back between requests and checks.

One component's code runs in the same process as every other component's: a default
dtype set at import, grad mode switched off, `torch.Tensor.__eq__` replaced, a seeded
generator or a warning filter would otherwise change what the NEXT component computes
and cost it its points. The baseline is taken once, before any submission code runs.
"""

import builtins
import math
import random
import sys
import warnings
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional


def seed(value: int) -> None:
    """torch.manual_seed(value) where no CUDA device is: torch.manual_seed queues a call for each
    lazily initialised device (CUDA, XPU, MTIA) with the caller's formatted stack, about 5 ms a
    call (hundreds of calls a grade) and a list that grows for good. The CPU generator gets the
    same seed, and so gives the same numbers; where CUDA is available, it is seeded as
    torch.manual_seed seeds it."""
    torch.default_generator.manual_seed(value)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(value)

# (get, set) pairs for the switches torch keeps per process
SWITCHES: dict[str, tuple[Any, Any]] = {
    "default dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "anomaly mode": (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
    "deterministic algorithms": (torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
    "threads": (torch.get_num_threads, torch.set_num_threads),
}

# namespaces whose attributes a submission might replace (functions, methods, classes)
WATCHED: tuple[object, ...] = (torch, torch.Tensor, torch.nn, torch.nn.functional, torch.nn.Module, builtins, math)


class Baseline:
    def __init__(self):
        self.switches = {name: get() for name, (get, _) in SWITCHES.items()}
        self.warnings = list(warnings.filters)
        self.tables = [(space, dict(vars(space))) for space in WATCHED]
        self.guards: list = []  # inference mode turned off again (restore_switches)

    def restore_switches(self) -> None:
        """Cheap: before every request."""
        if torch.is_inference_mode_enabled():
            # entered at import and never left (its guard kept in a global): every tensor made after was an
            # inference tensor, and another component's backward failed. A guard of our own, kept, turns it
            # off again (the submission's own guard is left alone, below it)
            guard = torch.inference_mode(False)
            guard.__enter__()
            self.guards.append(guard)
        for name, (get, put) in SWITCHES.items():
            if get() != self.switches[name]:
                put(self.switches[name])
        if torch.get_default_device() != torch.device("cpu"):
            torch.set_default_device(None)
        if warnings.filters != self.warnings:
            warnings.filters = list(self.warnings)  # as warnings.catch_warnings does

    def restore_all(self) -> None:
        """After an import and between checks: the switches, the watched namespaces, the generators."""
        self.restore_switches()
        # names the submission ADDED are left: torch adds some lazily, and correct code never reads them
        for space, table in self.tables:
            now = vars(space)
            for name, value in table.items():
                if now.get(name, _MISSING) is not value:
                    _set(space, name, value)
        seed(0)
        random.seed(0)
        numpy = sys.modules.get("numpy")
        if isinstance(numpy, ModuleType):
            numpy.random.seed(0)


_MISSING = object()


def _set(space: object, name: str, value: object) -> None:
    try:
        setattr(space, name, value)
    except (AttributeError, TypeError):  # a read-only slot the submission could not have changed either
        pass


def flush_output():
    """stdout is block-buffered into a file: without a flush after each request, a few printed
    lines stayed in the buffer and never reached the report."""
    for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
        try:
            stream.flush()  # type: ignore[union-attr]
        except BaseException:  # the submission's own replacement may raise anything
            pass
