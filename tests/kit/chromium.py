"""One headless Chromium for many pages, driven over its DevTools protocol on a pipe (stdlib only).

`chromium --headless --dump-dom PAGE` starts a whole browser per page: for the docs site's pages
that was most of a minute of CI. `--remote-debugging-pipe` keeps one browser and reads commands
from its fd 3 and writes replies to its fd 4 (JSON messages ended by a NUL byte), so each page costs
a navigation. `dom` returns what `--dump-dom` printed: the document's DOM once its load event fired.
"""

import json
import os
import select
import subprocess
import time
from pathlib import Path


class Browser:
    def __init__(self, exe: str, profile: Path, *, timeout: float = 120):
        commands, self._commands = os.pipe()  # Chromium reads fd 3
        self._replies, replies = os.pipe()  # Chromium writes fd 4
        self._timeout, self._buffer, self._id, self._session = timeout, b"", 0, ""

        def as_fds_3_and_4():  # in the child; a dup first, so that no end is overwritten before it is copied
            read, write = os.dup(commands), os.dup(replies)
            os.dup2(read, 3)  # dup2 leaves the copy open across exec (the pipes' own fds close there)
            os.dup2(write, 4)

        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
        self.proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                                      "--remote-debugging-pipe"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=as_fds_3_and_4, close_fds=False)
        os.close(commands)
        os.close(replies)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def dom(self, url: str) -> str:
        """The DOM of `url` once loaded, as `chromium --dump-dom` prints it."""
        if not self._session:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self._call("Page.enable", session=self._session)
        self._call("Page.navigate", {"url": url}, session=self._session, until="Page.loadEventFired")
        got = self._call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                              "returnByValue": True}, session=self._session)
        return got["result"]["value"]

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._commands, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass

    def _call(self, method: str, params: dict | None = None, *, session: str = "", until: str = "") -> dict:
        """Send one command; its result, once the event `until` (of this session) has come too."""
        self._id += 1
        message: dict = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self._timeout
        result, seen = None, not until
        while result is None or not seen:
            reply = self._next(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"Chromium: {method}: {reply['error']}")
                result = reply["result"]
            elif reply.get("method") == until and reply.get("sessionId") == session:
                seen = True
        return result

    def _next(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError(f"Chromium said nothing for {self._timeout:g} s")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium closed its pipe (exit status {self.proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)
