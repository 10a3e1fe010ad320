"""A whole bot with its public pages on 127.0.0.1 (port 0): a public count, a private one, a
public count with hostile labels, a fake clock, and a client for the pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from bot.domain.limits import MAX_LABEL, MAX_TITLE
from bot.domain.model import Tally, TallyState
from bot.domain.subscription import Platform
from bot.ingest.pipeline import Ingested
from bot.runtime.app import App
from bot.settings.loader import Config, parse
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.web.browser import require_chromium

PUBLIC = "bessemer-2021"
PRIVATE = "board-2026"
HOSTILE = "hostile-2026"
HOSTILE_LABEL = '<script>alert("x")</script><img src=x onerror=alert(1)>'
HOSTILE_TITLE = "</title><b>bold</b> & <i>co</i> \"quoted\" 'single'"


LONGEST = "longest"
"""A public count at every limit: its title and labels as long as allowed, each one word."""
LONGEST_WORD = ("Gewerkschaftsvertretungsversammlungsbeschlussvorlage" * 2)[:MAX_LABEL]


def web_config(
    tmp: Path, *, port: int = 0, web: dict[str, Any] | None = None, store_url: str | None = None
) -> Config:
    return parse(
        {
            "store": {
                "url": store_url or f"sqlite+aiosqlite:///{tmp / 'var' / 'tallybot.sqlite3'}"
            },
            "web": {"host": "127.0.0.1", "port": port, **(web or {})},
            "counts": [
                {
                    "id": PUBLIC,
                    "title": "Amazon BHM1 union election, Bessemer AL",
                    "rule": "majority",
                    "tie_holder": "no",
                    "received": 3215,
                    "status": "counting",
                    "public": True,
                    "choices": [
                        {"id": "yes", "label": "Yes (RWDSU)"},
                        {"id": "no", "label": "No union"},
                    ],
                },
                {
                    "id": PRIVATE,
                    "title": "Board election (private)",
                    "rule": "plurality",
                    "status": "counting",
                    "choices": [{"id": "ana"}, {"id": "ben"}],
                },
                {
                    "id": HOSTILE,
                    "title": HOSTILE_TITLE,
                    "rule": "plurality",
                    "status": "counting",
                    "public": True,
                    "choices": [
                        {"id": "a", "label": HOSTILE_LABEL},
                        {"id": "b", "label": "[link](https://evil.example) @everyone"},
                    ],
                },
                {
                    "id": LONGEST,
                    "title": ("Betriebsratswahl" * 10)[:MAX_TITLE],
                    "rule": "plurality",
                    "status": "counting",
                    "public": True,
                    "choices": [
                        {"id": "a", "label": LONGEST_WORD},
                        {"id": "b", "label": LONGEST_WORD.upper()},
                        {"id": "c", "label": "Nein"},
                    ],
                },
            ],
        },
        tmp / "tallybot.toml",
    )


async def no_sleep(seconds: float) -> None:
    return None


def make_app(config: Config, clock: FakeClock, *, schema: str | None = None) -> App:
    adapter = RecordingAdapter()
    return App(
        config,
        {Platform("console"): lambda commands: adapter},
        clock=clock,
        sleep=no_sleep,
        poll=False,
        schema=schema,
    )


@dataclass
class Site:
    app: App
    clock: FakeClock
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        assert self.app.web is not None
        return self.app.web.url

    async def get(self, path: str, **kwargs: Any) -> tuple[int, dict[str, str], str]:
        async with self.http.get(self.url + path, **kwargs) as resp:
            return resp.status, dict(resp.headers), await resp.text()

    async def tally(self, count_id: str = PUBLIC, **figures: Any) -> Ingested:
        """Ingest a tally through the pipeline (as a poll or a push would)."""
        return await ingest(self.app, self.clock, count_id, **figures)


async def ingest(app: App, clock: FakeClock, count_id: str = PUBLIC, **figures: Any) -> Ingested:
    clock.advance(60)
    state = TallyState(figures.pop("state", "counting"))
    extra = {k: figures.pop(k) for k in ("void", "challenged", "received") if k in figures}
    tally = Tally(count_id, figures, clock.now(), "nlrb-feed", state=state, **extra)
    result = await app.pipeline.ingest(tally)
    assert result.accepted, result.detection
    return result


@asynccontextmanager
async def opened_site(tmp_path: Path) -> AsyncIterator[Site]:
    clock = FakeClock(FakeClock().now() + timedelta(hours=6))
    async with make_app(web_config(tmp_path), clock) as app, aiohttp.ClientSession() as http:
        yield Site(app, clock, http)


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    async with opened_site(tmp_path) as opened:
        yield opened


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Browser]:
    """Headless Chromium (see ``tests.web.browser``), one for a whole test module: starting it
    (and Playwright's driver) is most of the CPU of a browser test."""
    path = require_chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=path)
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium: Browser) -> AsyncIterator[Browser]:
    """The module's Chromium, for one test. Each page a test opens (``browser.new_page``) is in
    a new browser context of its own, and every context is closed after the test: no cookie,
    storage, cache or page passes from one test to the next. A module using it runs its tests
    in the module's event loop (``pytestmark = pytest.mark.asyncio(loop_scope="module")``),
    and its async fixtures too (``site`` there is ``opened_site`` in that loop)."""
    yield chromium
    for context in chromium.contexts:
        await context.close()
