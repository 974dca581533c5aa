"""The restarts' worker template, started ahead of the restart that needs it.

A sandbox given no template starts one at its first restart, so that the restarts after it fork
rather than import torch again. Started then, its import (2 s or more on a loaded machine) adds to
what a hang costs: a request still running well into its deadline is likely to be one, so the
template starts beside it, on a thread, and the restart finds it ready.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.limits import Limits
    from grader.sandbox.reap import KitProcesses
    from grader.sandbox.template import Template

# A request this far into its deadline (a share of it, and never sooner than the seconds) starts it
AHEAD_SHARE, AHEAD_MIN_SECONDS = 1 / 3, 2.0


def ahead_after(seconds: float) -> float:
    """How long into a request of `seconds` the template starts."""
    return max(AHEAD_MIN_SECONDS, seconds * AHEAD_SHARE)


class Spare:
    """At most one template for one sandbox's restarts: `begin` it early, `take` it at the restart."""

    def __init__(self, limits: Limits, kit: KitProcesses):
        self.limits = limits
        self.kit = kit
        self._thread: threading.Thread | None = None
        self._made: Template | None = None
        self._taken = self._closed = False
        self._lock = threading.Lock()

    def begin(self) -> None:
        if self._thread is None and not self._taken and not self._closed:
            self._thread = threading.Thread(target=self._start, name="grade-spare-template", daemon=True)
            self._thread.start()

    def _start(self) -> None:
        made = _template(self.limits, self.kit)
        with self._lock:
            if self._closed:  # the sandbox ended first: nobody takes it
                if made is not None:
                    made.close()
                return
            self._made = made

    def take(self) -> Template | None:
        """The template (started now where `begin` was not called), or None where none can start;
        the taker closes it."""
        self._taken = True
        if self._thread is None:
            return _template(self.limits, self.kit)
        self._thread.join()
        with self._lock:
            made, self._made = self._made, None
        return made

    def close(self) -> None:
        """Close a template begun and never taken; one still starting closes itself when started
        (not waited for: a sandbox that ends, on Ctrl-C too, does not wait for torch's import)."""
        with self._lock:
            self._closed = True
            made, self._made = self._made, None
        if made is not None:
            made.close()


def _template(limits: Limits, kit: KitProcesses) -> Template | None:
    from grader.sandbox.template import Template, TemplateError, unavailable

    try:
        return None if unavailable() else Template(limits, kit=kit).start()
    except TemplateError:
        return None
