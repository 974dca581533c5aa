"""What the long-running commands share: a live progress bar, and Ctrl-C that stops after the step under way."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StopRequest:
    """Ctrl-C while training: the first asks to stop after the step under way (training then writes a
    checkpoint); a second stops at once (KeyboardInterrupt)."""

    def __init__(self):
        self.requested = False

    def __call__(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextmanager
def ctrl_c_stops() -> Iterator[StopRequest]:
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield request
        return
    previous = signal.signal(signal.SIGINT, request)
    try:
        yield request
    finally:
        signal.signal(signal.SIGINT, previous)


def progress_bar(console, label: str = "training"):
    """A live bar: steps done of all, loss, learning rate, tokens/s, time taken and time left."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn(f"[bold blue]{label}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("loss [bold]{task.fields[loss]:.3f}"),
        TextColumn("lr {task.fields[lr]:.2e}"),
        TextColumn("{task.fields[tps]:,.0f} tok/s"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console)
