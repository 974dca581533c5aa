"""What a request to the submission's process can end in besides an answer: the submission's own
exception (StudentError), or a fault of its process (WorkerFault), and what a timeout says of where
its code was. Everything in them came from the submission: bounded here."""

import re
from pathlib import Path

# What the grader keeps of an exception of the submission's (protocol.describe_error sends no more)
MAX_NAME, MAX_MESSAGE, MAX_MRO, MAX_WHERE, MAX_WHERE_LINES = 200, 4000, 32, 300, 6
# a frame as faulthandler writes it: `  File "/.../submission/assignment2/masks.py", line 17 in make_pad_mask`
FRAME = re.compile(r'^\s*File "([^"\n]{1,1000})", line (\d{1,7}) in ([^\n]{1,200})$', re.M)


class StudentError(Exception):
    """The submission's code raised; the fields are what the worker reported, as data."""

    def __init__(self, type: str, mro: list[str], message: str, where: list[str]):
        # bounded here too: the submission's code can write an answer of its own in place of the worker's
        type, message = type[:MAX_NAME], message[:MAX_MESSAGE]
        mro, where = [c[:MAX_NAME] for c in mro[:MAX_MRO]], [w[:MAX_WHERE] for w in where[:MAX_WHERE_LINES]]
        super().__init__(f"{type}: {message}")
        self.type, self.mro, self.message, self.where = type, mro, message, where

    @property
    def not_attempted(self) -> bool:
        return "NotImplementedError" in self.mro


class WorkerFault(BaseException):
    """The worker died, hung or broke the protocol; `kind` is crash, timeout or tamper.

    A BaseException, so that Hypothesis does not replay and shrink a fault (each replay
    would cost a restart or a timeout): the check ends at once."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail
        self.check = ""  # the check it happened in, where one was running (grader.suite.plugin)
        self.where: list[str] = []  # a timeout's call chain in the submission's files, outermost first


def doing(message: dict) -> str:
    op, target = message.get("op"), message.get("target")
    if op == "import":
        return f"importing {message['module'].replace('.', '/')}.py"
    if op == "call" and isinstance(target, str):
        return f"running {target.rpartition(':')[2]}"
    if op in ("call", "backward") and message.get("method"):
        return f"running {message['method']}"
    return f"running your code ({op})"


def student_frames(dump: str, prefix: str, staged: Path) -> list[str]:
    """The frames of files under `prefix` (the submission as the worker sees it) in a faulthandler
    dump, of the first thread that has any, outermost first; each must name a file of `staged`."""
    for thread in re.split(r"^(?=Current thread|Thread 0x)", dump, flags=re.M):
        frames = []
        for path, line, name in FRAME.findall(thread):
            rel = path[len(prefix):] if path.startswith(prefix) else ""
            file = staged / rel
            if not rel or ".." in rel.split("/") or not file.is_file():
                continue
            try:
                source = file.read_text(encoding="utf-8", errors="replace").splitlines()[int(line) - 1].strip()
            except (OSError, IndexError):
                source = ""
            frames.append(f"{rel}:{int(line)} in {name.strip()}: {source}"[:MAX_WHERE])
        if frames:
            return frames[::-1][-MAX_WHERE_LINES:]  # faulthandler writes the innermost first
    return []


def bounded_str(e: BaseException) -> str:
    try:
        return str(e)[:400]
    except Exception:
        return "(a message that cannot be printed)"
