"""A real headless Chromium (Debian's `chromium`), driven by Playwright (`playwright.sync_api`,
launched on that binary: Playwright's own browser builds are never downloaded): open a page,
evaluate JavaScript in it (a click is ``element.click()`` run by the page's own handlers), send
a DevTools command (`Chromium.call`: the screen size a phone has), take a screenshot.

One Playwright driver serves the browsers open at once in the test process, and stops when the
last one closes; each `Chromium` is a browser of its own (a profile directory of its own), so
two of them are two independent pages."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import CDPSession, Page, Playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium: `bash .ci/install-chromium` installs Debian's"
)
_driver: Playwright | None = None  # while any browser of this process is open
_open = 0  # how many are


def _playwright() -> Playwright:
    """The Playwright driver, started by the first browser open in this process. It holds an
    event loop on this thread while it runs, so it is stopped when the last browser closes
    (else a later test's `asyncio.run` here fails)."""
    global _driver, _open
    if _driver is None:
        from playwright.sync_api import sync_playwright

        _driver = sync_playwright().start()
    _open += 1
    return _driver


def _release() -> None:
    global _driver, _open
    _open -= 1
    if _open == 0 and _driver is not None:
        _driver.stop()
        _driver = None


class Chromium:
    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        driver = _playwright()
        try:
            self._context = driver.chromium.launch_persistent_context(
                str(profile),
                executable_path=CHROMIUM,
                headless=True,
                no_viewport=True,  # the screen size is the DevTools emulation (`open`, `call`)
                args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
            )
        except BaseException:
            _release()
            raise
        self._page: Page | None = None
        self._session: CDPSession | None = None

    @property
    def page(self) -> Page:
        assert self._page is not None, "open a page first"
        return self._page

    def open(self, url: str, width: int = 1280, height: int = 900, mobile: bool = False) -> None:
        """A new page at `url`, at that screen size; returns once the navigation is under way
        (what the page shows is waited for by the test)."""
        self._page = self._context.new_page()
        self._session = self._context.new_cdp_session(self._page)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )
        self._page.goto(url, wait_until="commit")

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A DevTools command to the open page."""
        assert self._session is not None, "open a page first"
        return self._session.send(method, params or {})

    def js(self, expression: str) -> Any:
        """What `expression` evaluates to in the page (awaited when a promise); None while a
        navigation replaces the page (a test waiting on it looks again)."""
        from playwright.sync_api import Error

        try:
            return self.page.evaluate(expression)
        except Error as exc:
            if "Execution context was destroyed" in exc.message:  # "... because of a navigation"
                return None
            raise

    def screenshot(self, path: Path) -> None:
        self.page.screenshot(path=str(path), full_page=True)

    def close(self) -> None:
        try:
            self._context.close()
        finally:
            _release()
