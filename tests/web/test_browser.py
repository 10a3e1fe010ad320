"""The page in a real browser (headless Chromium): the figures in the DOM, a tally shown
without a reload, a reconnect that catches up after a restart, 404 for a private count,
hostile labels as text, no console errors, and screenshots at phone and desktop widths."""

from __future__ import annotations

import html
import io
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, Page, expect

from bot.commands.request import Request
from bot.domain.chart_figure import NARROW_PX, SMALL_PT
from bot.domain.message import Message
from bot.domain.render_text import render
from bot.domain.subscription import ChannelRef, Platform
from bot.ingest.sources.replay import ReplaySource
from bot.runtime.app import App
from bot.runtime.cli import demo_config_path, replay_config
from bot.settings import loader as config_mod
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.web.browser import Watched, watched
from tests.web.conftest import (
    HOSTILE,
    HOSTILE_LABEL,
    HOSTILE_TITLE,
    LONGEST,
    LONGEST_WORD,
    PRIVATE,
    PUBLIC,
    Site,
    ingest,
    make_app,
    opened_site,
    web_config,
)

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),  # the loop of the module's one Chromium
    pytest.mark.xdist_group("browser"),  # on one worker: one Chromium a run, not one a worker
]

ROOT = Path(__file__).resolve().parents[2]
NEWS = ChannelRef(Platform("console"), "local", "news")
LIVE = 2000
"""Milliseconds a live update may take to show."""


@pytest_asyncio.fixture(loop_scope="module")
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    """The web tests' site (``tests.web.conftest``), in this module's event loop."""
    async with opened_site(tmp_path) as opened:
        yield opened


FOLLOWING = "Live: new figures appear here as they are counted."
OVER = "Final: the count is over; a correction would still appear here."


async def opened(
    browser: Browser, url: str, *, live: str = FOLLOWING, **context: object
) -> Watched:
    seen = await watched(browser, **context)
    response = await seen.page.goto(url)
    assert response is not None
    assert response.status == 200
    await expect(seen.page.locator("#live")).to_have_text(live, timeout=5000)
    return seen


async def test_the_longest_legal_words_fit_a_320_px_screen(site: Site, browser: Browser) -> None:
    await site.tally(LONGEST, a=120, b=118, c=7)
    seen = await opened(browser, f"{site.url}/c/{LONGEST}", viewport={"width": 320, "height": 640})
    page = seen.page
    await expect(page.locator("#rows th").first).to_have_text(LONGEST_WORD)
    for width in (320, 375):
        await page.set_viewport_size({"width": width, "height": 700})
        wide = await page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width  # no sideways scroll: every column on the screen
        note = await page.locator("#figures thead th").last.bounding_box()
        assert note is not None
        assert note["x"] + note["width"] <= width
    assert seen.errors == []


async def test_a_final_count_says_it_is_over(site: Site, browser: Browser) -> None:
    await site.tally(yes=463, no=1100, challenged=505)
    await site.tally(yes=738, no=1798, void=76, challenged=505, received=3117, state="final")
    seen = await opened(browser, f"{site.url}/c/{PUBLIC}", live=OVER)
    page = seen.page
    await expect(page.locator("#headline")).to_have_text("Final tally: No union wins, 1,798 to 738")
    lines = await page.locator("#lines li").all_inner_texts()
    assert lines[0] == "No union won by 1,060 votes (41.8 points)."
    assert not [line for line in lines if "leads by" in line]
    footer = await page.locator("#footer").inner_text()
    assert footer.startswith("Final tally · figures from nlrb-feed · as of ")
    assert seen.errors == []


async def test_a_count_with_no_figures_says_so_once(site: Site, browser: Browser) -> None:
    seen = await opened(browser, f"{site.url}/c/{LONGEST}")
    page = seen.page
    assert await page.get_by_text("No figures yet.").count() == 1
    await expect(page.locator("#figures")).to_be_hidden()
    await site.tally(LONGEST, a=3, b=2, c=1)
    await expect(page.locator("#figures")).to_be_visible(timeout=LIVE)
    await expect(page.locator("#rows tr")).to_have_count(3)
    assert seen.errors == []


async def test_figures_in_the_dom_and_a_tally_shown_without_reload(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    await site.tally(yes=84, no=201, challenged=10)
    await site.tally(yes=463, no=1100, challenged=505)
    seen = await opened(browser, f"{site.url}/c/{PUBLIC}")
    page = seen.page
    await expect(page.locator("h1")).to_have_text("Amazon BHM1 union election, Bessemer AL")
    await expect(page.locator("#headline")).to_have_text("No union leads by 637")
    await expect(page.locator("#headline")).to_have_attribute("aria-live", "polite")
    rows = page.locator("#rows tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(1).locator("td")).to_have_text(
        ["1,100", "70.4%", "needs 508 more to clinch"]
    )
    await expect(page.locator("#history li")).to_have_count(2)
    await page.evaluate("window.notReloaded = true")

    await site.tally(yes=500, no=1300, challenged=505)
    await expect(page.locator("#headline")).to_have_text("No union leads by 800", timeout=LIVE)
    await expect(rows.nth(1).locator("td").first).to_have_text("1,300")
    await expect(page.locator("#history li").first).to_have_attribute("data-seq", "3")
    await expect(page.locator("#chart")).to_have_attribute("src", f"/c/{PUBLIC}/chart-3.svg")
    assert await page.evaluate("window.notReloaded") is True
    assert await page.title() == "Amazon BHM1 union election, Bessemer AL: No union leads by 800"

    for width, height in ((375, 812), (1280, 900)):
        await page.set_viewport_size({"width": width, "height": height})
        await page.screenshot(path=tmp_path / f"page-{width}.png", full_page=True)
        assert (tmp_path / f"page-{width}.png").stat().st_size > 10_000
    await page.set_viewport_size({"width": 320, "height": 640})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 320  # no sideways scroll
    assert seen.errors == []


async def chart_shown(page: Page, url: str) -> None:
    """Wait until the chart the page shows is the image at ``url``, loaded."""
    shows = "url => { const el = document.getElementById('chart');"
    shows += " return el.currentSrc === url && el.complete && el.naturalWidth > 0; }"
    await page.wait_for_function(shows, arg=url, timeout=5000)


async def test_a_phone_shows_the_narrow_chart_across_its_screen(
    site: Site, browser: Browser
) -> None:
    """Issue 27 part 5: at 320 px the chart shown is the narrow one, on the screen, its smallest
    type 10 CSS px or more; a live update swaps it for the next narrow one; a desktop gets the
    wide one."""
    await site.tally(yes=84, no=201, challenged=10)
    await site.tally(yes=463, no=1100, challenged=505)
    seen = await opened(browser, f"{site.url}/c/{PUBLIC}", viewport={"width": 320, "height": 640})
    page = seen.page
    chart = page.locator("#chart")
    await chart_shown(page, f"{site.url}/c/{PUBLIC}/chart-2-narrow.svg")
    box = await chart.bounding_box()
    assert box is not None
    assert box["x"] >= 0  # across the screen, all of it
    assert box["x"] + box["width"] <= 320
    assert box["width"] / NARROW_PX * SMALL_PT * 100 / 72 >= 10  # points at 100 dpi, in CSS px
    assert await page.evaluate("document.documentElement.scrollWidth") <= 320
    status, headers, _ = await site.get(f"/c/{PUBLIC}/chart-2-narrow.svg")
    assert (status, headers["Content-Type"]) == (200, "image/svg+xml")
    assert headers["Cache-Control"] == "public, max-age=3600"

    await site.tally(yes=500, no=1300, challenged=505)
    await expect(page.locator("#headline")).to_have_text("No union leads by 800", timeout=LIVE)
    await chart_shown(page, f"{site.url}/c/{PUBLIC}/chart-3-narrow.svg")
    await page.set_viewport_size({"width": 1280, "height": 900})
    await chart_shown(page, f"{site.url}/c/{PUBLIC}/chart-3.svg")
    assert seen.errors == []


async def test_the_page_reconnects_after_a_restart_and_catches_up(
    site: Site, browser: Browser, tmp_path: Path
) -> None:
    await site.tally(yes=84, no=201)
    seen = await opened(browser, f"{site.url}/c/{PUBLIC}")
    page = seen.page
    assert site.app.web is not None
    port = site.app.web.port
    await site.app.aclose()  # the server goes away with the page open
    await expect(page.locator("#live")).to_have_text("Reconnecting for live updates…")

    config = web_config(tmp_path, port=port or 0)
    clock = FakeClock(site.clock.now())
    async with make_app(replace(config, web=None), clock) as quiet:  # no pages: nobody is told
        await ingest(quiet, clock, PUBLIC, yes=300, no=500)
        await ingest(quiet, clock, PUBLIC, yes=463, no=1100)
    async with make_app(config, clock) as again:
        await expect(page.locator("#headline")).to_have_text("No union leads by 637", timeout=5000)
        await expect(page.locator("#history li")).to_have_count(3)
        await expect(page.locator("#live")).to_have_text(
            "Live: new figures appear here as they are counted."
        )
        await ingest(again, clock, PUBLIC, yes=500, no=1300)
        await expect(page.locator("#headline")).to_have_text("No union leads by 800", timeout=LIVE)
    assert [e for e in seen.errors if "ERR_CONNECTION_REFUSED" not in e] == []


async def test_a_private_count_is_404(site: Site, browser: Browser) -> None:
    await site.tally(PRIVATE, ana=3, ben=4)
    seen = await watched(browser)
    for path in (f"/c/{PRIVATE}", "/c/no-such-count"):
        response = await seen.page.goto(f"{site.url}{path}")
        assert response is not None
        assert response.status == 404
        await expect(seen.page.locator("h1")).to_have_text("Not found")
        await expect(seen.page.locator("body")).not_to_contain_text("Board election")


async def test_hostile_labels_show_as_text(site: Site, browser: Browser) -> None:
    await site.tally(HOSTILE, a=3, b=4)
    seen = await opened(browser, f"{site.url}/c/{HOSTILE}")
    page = seen.page
    await expect(page.locator("h1")).to_have_text(HOSTILE_TITLE)
    await expect(page.locator("#rows th").first).to_have_text(HOSTILE_LABEL)
    await site.tally(HOSTILE, a=5, b=4)  # and through the script's live path too
    await expect(page.locator("#rows tr").first).to_have_class("choice c0 leading", timeout=LIVE)
    await expect(page.locator("#rows th").first).to_have_text(HOSTILE_LABEL)
    assert await page.locator("b, i, script:not([src]), img:not(#chart)").count() == 0
    assert seen.dialogs == []
    assert seen.errors == []


async def test_dark_mode_follows_the_system(site: Site, browser: Browser) -> None:
    await site.tally(yes=84, no=201)
    colours = []
    for scheme in ("light", "dark"):
        seen = await opened(browser, f"{site.url}/c/{PUBLIC}", color_scheme=scheme)
        colours.append(await seen.page.evaluate("getComputedStyle(document.body).backgroundColor"))
        assert seen.errors == []
    assert colours == ["rgb(255, 255, 255)", "rgb(18, 18, 18)"]


async def test_the_demo_count_ends_final_on_its_page(browser: Browser, tmp_path: Path) -> None:
    """The demo's whole Bessemer count, replayed: the page ends on the final, as the chat does.
    ``TALLYBOT_UPDATE_GOLDEN=1`` saves the docs' picture of it (docs/page-bessemer-2021.png),
    beside the console's final message."""
    clock = FakeClock()

    cfg = replay_config(config_mod.load(demo_config_path()), tmp_path, speed=1.0)
    adapter = RecordingAdapter()
    app = App(
        cfg, {Platform("console"): lambda c: adapter}, clock=clock, sleep=clock.sleep, poll=False
    )
    async with app:
        await app.commands.handle(Request(NEWS, "u", "u", f"subscribe {PUBLIC} all"))
        for count_id, source in app.sources.items():
            assert isinstance(source, ReplaySource)
            while not source.done:
                await clock.sleep(source.next_due() or 0.0)
                await app.pollers[count_id].poll()
        await app.idle()
        assert app.web is not None
        seen = await opened(browser, f"{app.web.url}/c/{PUBLIC}", live=OVER, viewport=PICTURE)
        page = seen.page
        final = "Final tally: No union wins, 1,798 to 738"
        await expect(page.locator("#headline")).to_have_text(final)
        await expect(page.locator("#state")).to_have_text("Final")
        await expect(page.locator("#history li")).to_have_count(12)
        chat = [m for m in adapter.messages(NEWS) if isinstance(m, Message)][-1]
        assert chat.headline == final
        page_png = await page.screenshot(full_page=True)
        console = await browser.new_page(viewport={"width": 560, "height": 200})
        await console.set_content(CONSOLE_HTML.format(text=html.escape(render(chat))))
        chat_png = await console.locator("pre").screenshot()
        assert seen.errors == []
    picture = side_by_side(page_png, chat_png)
    (tmp_path / "page-bessemer-2021.png").write_bytes(picture)
    if os.environ.get("TALLYBOT_UPDATE_GOLDEN") == "1":
        (ROOT / "docs" / "page-bessemer-2021.png").write_bytes(picture)


PICTURE = {"width": 760, "height": 900}
CONSOLE_HTML = (
    '<body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:16px;color:#e6e6e6;'
    'font:14px/1.45 DejaVu Sans Mono,monospace;white-space:pre-wrap">{text}</pre></body>'
)


def side_by_side(left: bytes, right: bytes) -> bytes:
    """The page and the chat message next to each other, on white, as one PNG."""
    from PIL import Image

    a = Image.open(io.BytesIO(left)).convert("RGB")
    b = Image.open(io.BytesIO(right)).convert("RGB")
    gap = 24
    out = Image.new("RGB", (a.width + gap + b.width + gap, max(a.height, b.height + gap)), "white")
    out.paste(a, (0, 0))
    out.paste(b, (a.width + gap, gap))
    small = out.quantize(256, method=Image.Quantize.FASTOCTREE)
    raw = io.BytesIO()
    small.save(raw, format="PNG", optimize=True)
    return raw.getvalue()


async def test_the_embed_shows_in_a_listed_origins_frame_only(
    browser: Browser, tmp_path: Path
) -> None:
    """A live blog on a listed origin frames ``?embed=1``; one on another origin cannot."""

    async def blog(request: web.Request) -> web.Response:
        src = request.query["src"]
        return web.Response(
            text=f'<!doctype html><title>blog</title><link rel="icon" href="data:,">'
            f'<iframe id="f" src="{src}"></iframe>',
            content_type="text/html",
        )

    hosts = []
    for _ in range(2):
        app = web.Application()
        app.router.add_get("/", blog)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        hosts.append((runner, f"http://127.0.0.1:{runner.addresses[0][1]}"))
    (_, listed), (_, other) = hosts
    clock = FakeClock()
    config = web_config(tmp_path, web={"embed_origins": [listed]})
    try:
        async with make_app(config, clock) as bot:
            await ingest(bot, clock, PUBLIC, yes=463, no=1100)
            assert bot.web is not None
            embed = f"{bot.web.url}/c/{PUBLIC}?embed=1"
            seen = await watched(browser)
            await seen.page.goto(f"{listed}/?src={embed}")
            frame = seen.page.frame_locator("#f")
            await expect(frame.locator("#headline")).to_have_text("No union leads by 637")
            await expect(frame.locator("#history")).to_have_count(0)  # the compact variant
            assert seen.errors == []

            refused = await watched(browser)
            async with refused.page.expect_console_message(
                lambda m: "frame-ancestors" in m.text, timeout=5000
            ):
                await refused.page.goto(f"{other}/?src={embed}")
            frames = refused.page.frames
            assert len(frames) == 2
            assert await frames[1].locator("#headline").count() == 0
    finally:
        for runner, _ in hosts:
            await runner.cleanup()
