"""A real headless Chromium driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: commands on its fd 3, answers on its fd 4, each JSON ended by a
NUL byte), so no WebDriver and no WebSocket client is needed: open a page, evaluate JavaScript
in it (a click is ``element.click()`` run by the page's own handlers), take a screenshot."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium: `bash .ci/install-chromium` installs Debian's"
)


class Chromium:
    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        self._to_chrome_r, self._to_chrome_w = os.pipe()
        self._from_chrome_r, self._from_chrome_w = os.pipe()
        reads, writes = self._to_chrome_r, self._from_chrome_w

        def fds() -> None:  # in the child: its fd 3 reads our commands, fd 4 writes answers
            high_r = fcntl.fcntl(reads, fcntl.F_DUPFD, 10)  # off 3 and 4 first, whatever
            high_w = fcntl.fcntl(writes, fcntl.F_DUPFD, 10)  # numbers the pipes were given
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [
                CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
            ],
            preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),  # kept after `fds` put the pipes there
        )  # fmt: skip
        os.close(reads)
        os.close(writes)
        self._next = 0
        self._buffer = b""
        self.session = ""

    def call(self, method: str, params: dict[str, Any] | None = None, top: bool = False) -> Any:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self.session and not top:
            message["sessionId"] = self.session
        os.write(self._to_chrome_w, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome_r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(line))

    def open(self, url: str, width: int = 1280, height: int = 900, mobile: bool = False) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, top=True)["targetId"]
        attached = self.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, top=True
        )
        self.session = attached["sessionId"]
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )
        self.call("Page.navigate", {"url": url})

    def js(self, expression: str) -> Any:
        """What `expression` evaluates to in the page (awaited when a promise)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        return result.get("result", {}).get("value")

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        os.close(self._to_chrome_w)
        os.close(self._from_chrome_r)
        self.proc.kill()
        self.proc.wait(30)
