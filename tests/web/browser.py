"""Headless Chromium for the page tests: Debian's ``chromium`` (or the one
``TALLYBOT_CHROMIUM`` names) driven with Playwright's Python API; no browser is downloaded.

Without a browser the tests skip, saying how to get one, unless ``TALLYBOT_REQUIRE_BROWSER=1``
(CI), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import pytest
from playwright.async_api import Browser, ConsoleMessage, Error, Page

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
NO_BROWSER = (
    "no Chromium found (looked for $TALLYBOT_CHROMIUM, /usr/bin/chromium and "
    f"{', '.join(CANDIDATES)} on PATH): install Debian's chromium (apt-get install -y chromium) "
    "to run the browser tests; TALLYBOT_REQUIRE_BROWSER=1 makes this a failure"
)


def chromium_path() -> str | None:
    named = os.environ.get("TALLYBOT_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    path = chromium_path()
    if path is None:
        if os.environ.get("TALLYBOT_REQUIRE_BROWSER") == "1":
            pytest.fail(NO_BROWSER)
        pytest.skip(NO_BROWSER)
    return path


@dataclass
class Watched:
    """A page, with every console error and uncaught exception it produced."""

    page: Page
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


async def watched(browser: Browser, **context: object) -> Watched:
    page = await browser.new_page(**context)  # type: ignore[arg-type]
    seen = Watched(page)

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            seen.errors.append(f"console {message.type}: {message.text}")

    def page_error(error: Error) -> None:
        seen.errors.append(f"uncaught: {error}")

    page.on("console", console)
    page.on("pageerror", page_error)
    page.on("dialog", lambda dialog: seen.dialogs.append(dialog.message))
    return seen
