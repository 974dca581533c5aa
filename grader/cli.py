"""The `grade` command line: one module per command (grader.commands), bad input one line, exit 2."""

import gc
import os
import shutil
import sys

from grader.commands import COMMANDS
from grader.course_table import ConfigError
from grader.grading.suites import keep_hypothesis_out_of_cwd


def main(argv: list[str] | None = None) -> int:
    status = _run(argv)
    if argv is None:
        # the `grade` program ends: the interpreter's last collection walks every object torch made
        # (main's return to the process's end: 1.0 s of a cold `grade assignment1`, 0.23 s frozen). Files
        # and temporary folders are closed and removed by their owners and atexit finalizers, not by it
        gc.freeze()
    return status


def _run(argv: list[str] | None) -> int:
    import importlib

    if sys.platform == "win32":  # the sandbox is POSIX's (resource limits, fork): no traceback, one line
        print("grade: runs on Linux, macOS or WSL2 (Windows Subsystem for Linux), not on Windows itself; "
              "install WSL2 and run it there", file=sys.stderr)
        return 2
    scratch = keep_hypothesis_out_of_cwd()
    program = argv is None  # the `grade` program itself, not a call from Python
    argv = sys.argv[1:] if argv is None else argv
    name = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        if name is None:
            return importlib.import_module("grader.commands.grade").main(argv)
        return importlib.import_module(f"grader.commands.{name}").main(argv[1:])
    except ConfigError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if program and name is None:
            # `grade assignmentN` (its sandbox already closed) ends now: the interpreter's exit (torch's
            # finalizers, a collection) took seconds; the other commands may have more to clean up
            sys.stdout.flush()
            sys.stderr.flush()
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            os._exit(130)
        return 130
