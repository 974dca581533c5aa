"""The grader's reading of the worker's answers (grader.sandbox.host.Sandbox): the deadline loop, the
asks for reference parts answered in the middle of a request, and where a request that ran out of
time had the submission's code (its stack dump, which the submission may forge: bounded and read
only against the grader's own copy of the staged files)."""

import os
import select
import signal
import time
from typing import Any

from grader.results import Reason
from grader.sandbox.faults import bounded_str, student_frames
from grader.sandbox.reap import descendants
from grader.sandbox.spare import ahead_after

# Requests for reference parts (the stand-ins' asks) one request may make, and a grading: an honest
# isolated check asks a few times per example; past these the submission is using the channel
MAX_ASKS_PER_REQUEST, MAX_ASKS = 20_000, 400_000
# A request that runs out of time: the signal that makes the worker write its Python stacks
# (grader.sandbox.child.worker.STACK_SIGNAL), how long to wait for them, and the most of them read
STACK_SIGNAL, STACK_SECONDS, MAX_STACK_BYTES = signal.SIGUSR1, 1.0, 256 * 1024
STACK_PAUSE = 0.05


class Answers:
    """A mixin of Sandbox: what it reads of the worker, within its deadlines."""

    proc: Any
    resp: int
    req: int
    template: Any
    restarts: int
    spare: Any
    on_ask: Any
    isolation: str
    here: str
    staged_files: dict
    student_seconds: float
    grader_seconds: float
    asks: int
    asks_now: int

    def _fault(self, kind: Reason, detail: str, where: list[str] | None = None):
        raise NotImplementedError

    def _death(self, when: str) -> str:
        raise NotImplementedError

    def _receive(self, seconds: float, where: str, doing: str, since: float | None = None):
        """The worker's next answer, within `seconds` of `since` (default: now); a timeout names the
        limit and `where` it is set."""
        from grader.sandbox.child import protocol

        begun = time.monotonic() if since is None else since
        deadline = begun + seconds
        nested = self.student_seconds  # what requests made while answering asks spend is counted there

        def wait():
            # an answer already there when the deadline has passed still counts
            left = max(deadline - time.monotonic(), 0)
            ahead = begun + ahead_after(seconds) - time.monotonic()
            if self.template is None and not self.restarts and 0 < ahead < left:
                if select.select([self.resp], [], [], ahead)[0]:
                    return
                self.spare.begin()
                left = max(deadline - time.monotonic(), 0)
            if not select.select([self.resp], [], [], left)[0]:
                chain = self._where_hung()
                at = f"; it was at {chain[-1].partition(': ')[0]}" if chain else ""
                self._fault(Reason.TIMEOUT, f"no answer within {seconds:g} s while {doing} ({where}); "
                                       f"the process was killed{at}", chain)
        try:
            while True:
                malformed = ""
                try:
                    reply = protocol.read_frame(self.resp, wait, protocol.ANSWERS)
                except EOFError:
                    reply = None
                    self._fault(Reason.CRASH, self._death(f"while {doing}"))
                except protocol.ProtocolError as e:
                    reply, malformed = None, str(e)[:200]
                if malformed:  # raised out here: the fault keeps nothing of the frame (its traceback held it)
                    self._fault(Reason.TAMPER, f"the submission's process sent a malformed answer ({malformed}); "
                                          "it was killed")
                if isinstance(reply, dict) and set(reply) == {"ask"} and self.on_ask is not None:
                    self.asks += 1
                    self.asks_now += 1
                    if self.asks_now > MAX_ASKS_PER_REQUEST or self.asks > MAX_ASKS:
                        reply = None
                        self._fault(Reason.TAMPER, f"the submission's process asked for reference parts more than "
                                              f"{MAX_ASKS_PER_REQUEST:,} times in one request or {MAX_ASKS:,} "
                                              "in a grading; it was killed")
                    self._serve_ask(reply["ask"])
                    continue
                if not isinstance(reply, dict) or not ({"ok"} == set(reply) or {"error"} == set(reply)
                                                      and isinstance(reply["error"], dict)):
                    reply = None
                    self._fault(Reason.TAMPER, "the submission's process sent an answer the grader did not ask for; "
                                          "it was killed")
                return reply
        finally:
            # this request's own time, the grader's answers to its asks included: its wall time less the
            # nested requests' (counted there)
            self.student_seconds += max(time.monotonic() - begun - (self.student_seconds - nested), 0.0)

    def _serve_ask(self, message):
        """Answer an ask. The grader's time answering is charged to the request, and never moves its
        deadline (a request of 15 s ran 40 s); what the submission's callables spend when the grader
        calls them back is counted in those nested requests, not twice here."""
        asked, before = time.monotonic(), self.student_seconds
        self._answer(message)
        self.grader_seconds += max(time.monotonic() - asked - (self.student_seconds - before), 0.0)

    def _answer(self, message):
        from grader.sandbox.child import protocol

        assert self.on_ask is not None
        try:
            answer = {"ok": self.on_ask(message)}
        except Exception as e:  # a bad request from the submission's side: tell it, keep grading
            answer = {"error": f"{type(e).__name__}: {bounded_str(e)}"[:500]}
        try:
            protocol.write_all(self.req, protocol.encode(answer))
        except OSError:
            self._fault(Reason.CRASH, self._death("while the grader answered it"))

    def _where_hung(self) -> list[str]:
        """Where the submission's code was in a request that ran out of time: STACK_SIGNAL makes the
        worker write its Python stacks to the answer pipe, read here for at most STACK_SECONDS. The
        frames of the submission's files, outermost first, as `assignment2/masks.py:17 in
        make_pad_mask: <the line>` (the line from the staged copy). Untrusted: the submission may
        write anything there, or nothing; only frames of its own staged files are kept."""
        proc = self.proc
        if proc is None:
            return []
        # in namespaces, proc is the launcher (its child, the namespace's init, ignores the signal); else the worker
        for pid in [*([] if self.isolation == "namespaces" else [proc.pid]), *descendants(proc.pid)]:
            try:
                os.kill(pid, STACK_SIGNAL)
            except (ProcessLookupError, PermissionError):
                pass
        data, end = b"", time.monotonic() + STACK_SECONDS
        while len(data) < MAX_STACK_BYTES:
            # once it has begun, a pause ends the dump (faulthandler writes it at once, from the handler)
            left = min(end - time.monotonic(), STACK_PAUSE if data else STACK_SECONDS)
            if left <= 0 or not select.select([self.resp], [], [], left)[0]:
                break
            try:
                chunk = os.read(self.resp, MAX_STACK_BYTES - len(data))
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return student_frames(data.decode("utf-8", "replace"), f"{self.here}/submission/", self.staged_files)
