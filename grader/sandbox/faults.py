"""What a request to the submission's process can end in besides an answer: the submission's own
exception (StudentError), or a fault of its process (WorkerFault), and what a timeout says of where
its code was. Everything in them came from the submission: bounded here."""

import re
from pathlib import Path

from grader.results import Fault, Reason

# What the grader keeps of an exception of the submission's (protocol.describe_error sends no more)
MAX_NAME, MAX_MESSAGE, MAX_MRO, MAX_WHERE, MAX_WHERE_LINES = 200, 4000, 32, 300, 6
# what a timeout's frames read of one staged file (staging refuses larger sources: grader.sandbox.stage)
MAX_SOURCE_READ = 1 << 20
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
    """The worker died, hung or broke the protocol: `fault` (grader.results.Fault, its kind Reason.CRASH,
    TIMEOUT or TAMPER, and the check it happened in, known when it is raised) as the grading keeps it,
    raised.

    A BaseException, so that Hypothesis does not replay and shrink a fault (each replay
    would cost a restart or a timeout): the check ends at once."""

    def __init__(self, kind: Reason, detail: str, check: str = "", where: list[str] | None = None):
        super().__init__(detail)
        self.fault = Fault(kind, detail, check)
        self.where = where or []  # a timeout's call chain in the submission's files, outermost first

    @property
    def kind(self) -> Reason:
        return self.fault.kind

    @property
    def detail(self) -> str:
        return self.fault.detail

    @property
    def check(self) -> str:
        return self.fault.check


def doing(message: dict) -> str:
    op, target = message.get("op"), message.get("target")
    if op == "import":
        return f"importing {message['module'].replace('.', '/')}.py"
    if op == "call" and isinstance(target, str):
        return f"running {target.rpartition(':')[2]}"
    if op in ("call", "backward") and message.get("method"):
        return f"running {message['method']}"
    return f"running your code ({op})"


def student_frames(dump: str, prefix: str, staged: dict[str, Path]) -> list[str]:
    """The frames of files under `prefix` (the submission as the worker sees it) in a faulthandler
    dump, of the first thread that has any, outermost first. The dump is the worker's say-so: a frame
    is given its source line only where its path is `prefix` followed by the name of a file the grader
    staged (`staged`: that name -> the grader's own copy), read from that copy, at most
    MAX_SOURCE_READ bytes of it; any other path under `prefix` is shown as the worker's text and never
    opened (a forged dump named the reference's files through /proc/self/cwd, and a 434 MB library)."""
    for thread in re.split(r"^(?=Current thread|Thread 0x)", dump, flags=re.M):
        frames = []
        lines: dict[str, list[str]] = {}
        for path, line, name in FRAME.findall(thread):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix):]
            source = ""
            if rel in staged:
                if rel not in lines:
                    lines[rel] = _head(staged[rel])
                number = int(line)
                source = lines[rel][number - 1].strip() if 0 < number <= len(lines[rel]) else ""
            frames.append(f"{rel}:{int(line)} in {name.strip()}: {source}"[:MAX_WHERE])
        if frames:
            return frames[::-1][-MAX_WHERE_LINES:]  # faulthandler writes the innermost first
    return []


def staged_files(root: Path) -> dict[str, Path]:
    """The files the grader staged under `root` (its own copy of the submission), by their path there."""
    return {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def _head(file: Path) -> list[str]:
    try:
        with open(file, "rb") as f:
            return f.read(MAX_SOURCE_READ).decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def bounded_str(e: BaseException) -> str:
    try:
        return str(e)[:400]
    except Exception:
        return "(a message that cannot be printed)"
