"""The public page over HTTP: the chat's own words and numbers, 404 for anything not public
(byte for byte the answer for a count that does not exist), escaping, headers, cards, charts
and the ``[web]`` settings."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

import aiohttp
import pytest

from bot.domain import format as fmt
from bot.errors import ConfigError
from bot.runtime.preflight import summary
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.testing.clock import FakeClock
from tests.web.conftest import (
    HOSTILE,
    HOSTILE_LABEL,
    HOSTILE_TITLE,
    PRIVATE,
    PUBLIC,
    Site,
    ingest,
    make_app,
    web_config,
)


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each element by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[str, str] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open.append(dict(attrs).get("id") or "")

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag not in ("meta", "link", "img", "br"):
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for element in self._open:
            if element:
                self.text[element] = self.text.get(element, "") + data

    def meta(self, key: str) -> str | None:
        for tag, attrs in self.tags:
            if tag == "meta" and key in (attrs.get("property"), attrs.get("name")):
                return attrs.get("content")
        return None


def parsed(body: str) -> Tags:
    tags = Tags()
    tags.feed(body)
    return tags


async def test_the_page_shows_the_status_message_word_for_word(site: Site) -> None:
    await site.tally(yes=84, no=201, challenged=10)
    result = await site.tally(yes=463, no=1100, challenged=505)
    status, _headers, body = await site.get(f"/c/{PUBLIC}")
    assert status == 200
    async with site.app.db.connect() as conn:
        count = await count_rows.get(conn, PUBLIC)
    assert count is not None
    message = fmt.for_status(count, result.tally)
    page = parsed(body)
    assert page.text["headline"] == message.headline == "No union leads by 637"
    assert page.text["title"] == "Amazon BHM1 union election, Bessemer AL"
    assert page.text["state"] == "Counting"
    rows = page.text["rows"]
    for choice in message.choices:
        assert choice.label in rows
        assert choice.votes_text in rows
        assert choice.share_text in rows
        assert choice.note in rows
    assert "1,100" in rows
    assert "70.4%" in rows
    assert "needs 508 more to clinch" in rows
    for line in message.lines:
        assert line in page.text["lines"]
    said = str(message.footer).replace("source: nlrb-feed", "figures from nlrb-feed")
    assert page.text["footer"] == said  # the footer's time in UTC, as the chat's
    history = page.text["history"]
    assert history.index("#2") < history.index("#1")  # newest first
    assert "No union leads by 637" in history
    assert "No union leads by 117" in history
    assert "Figures from nlrb-feed" in page.text["freshness"]


async def test_a_private_or_missing_count_is_the_same_404(site: Site) -> None:
    await site.tally(PRIVATE, ana=3, ben=4)
    answers = []
    for path in (f"/c/{PRIVATE}", "/c/no-such-count", f"/c/{PRIVATE}/events", "/c/Bad%20Id"):
        status, headers, body = await site.get(path)
        headers.pop("Date")
        answers.append((status, headers, body))
    assert answers[0][0] == 404
    assert all(a == answers[0] for a in answers)
    for path in (f"/c/{PRIVATE}/chart-1.png", "/metrics", "/api/counts/x/tally", "/"):
        status, headers, body = await site.get(path)
        assert (status, body) == (404, answers[0][2])


async def test_hostile_titles_and_labels_are_text(site: Site) -> None:
    await site.tally(HOSTILE, a=3, b=4)
    status, _, body = await site.get(f"/c/{HOSTILE}")
    assert status == 200
    assert HOSTILE_LABEL not in body
    assert "<b>bold</b>" not in body
    assert html.escape(HOSTILE_LABEL) in body.replace("&#34;", "&quot;")
    page = parsed(body)
    assert page.text["title"] == HOSTILE_TITLE
    assert HOSTILE_LABEL in page.text["rows"]
    assert [t for t, _ in page.tags].count("script") == 1
    assert [t for t, _ in page.tags].count("img") == 1


async def test_headers_are_strict_and_no_script_is_inline(site: Site) -> None:
    await site.tally(yes=84, no=201)
    status, headers, body = await site.get(f"/c/{PUBLIC}")
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["X-Frame-Options"] == "DENY"
    assert "Set-Cookie" not in headers
    assert headers["X-Content-Type-Options"] == "nosniff"
    page = parsed(body)
    for tag, attrs in page.tags:
        assert tag != "style"
        assert "style" not in attrs
        assert not any(name.startswith("on") for name in attrs)
        if tag == "script":
            src = attrs["src"]
            assert src is not None
            assert src.startswith("/static/page.js?v=")
            status, headers, script = await site.get(src)
            assert status == 200
            assert headers["Content-Type"].startswith("text/javascript")
            assert "innerHTML" not in script


async def test_cards_name_the_headline_and_the_png_of_the_update(site: Site) -> None:
    await site.tally(yes=84, no=201)
    await site.tally(yes=463, no=1100)
    _, _, body = await site.get(f"/c/{PUBLIC}")
    page = parsed(body)
    assert page.meta("og:title") == "Amazon BHM1 union election, Bessemer AL"
    assert page.meta("og:description") == page.meta("twitter:description") == page.text["headline"]
    image = page.meta("og:image")
    assert image == f"{site.url}/c/{PUBLIC}/chart-2.png" == page.meta("twitter:image")
    assert page.meta("twitter:card") == "summary_large_image"
    async with site.http.get(f"{site.url}/c/{PUBLIC}/chart-2.png") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "image/png"
        png = await resp.read()
    assert png.startswith(b"\x89PNG")
    assert site.app.web is not None
    count = await site.app.web.counts.visible(PUBLIC)
    assert count is not None
    assert site.app.charts.get(count, 2) == png  # the chat's own cache: drawn once per update
    status, headers, svg = await site.get(f"/c/{PUBLIC}/chart-2.svg")
    assert status == 200
    assert headers["Content-Type"] == "image/svg+xml"
    assert svg.lstrip().startswith("<?xml")
    assert "<script" not in svg
    assert (await site.get(f"/c/{PUBLIC}/chart-9.svg"))[0] == 404


async def test_the_embed_is_framed_only_by_the_listed_origins(tmp_path: Path) -> None:
    origins = ["https://news.example", "https://live.example:8443"]
    config = web_config(
        tmp_path, web={"embed_origins": origins, "public_url": "https://c.example/"}
    )
    async with make_app(config, FakeClock()) as app, aiohttp.ClientSession() as http:
        site = Site(app, FakeClock(), http)
        _, headers, body = await site.get(f"/c/{PUBLIC}?embed=1")
        assert headers["Content-Security-Policy"].endswith(
            "frame-ancestors https://news.example https://live.example:8443"
        )
        assert "X-Frame-Options" not in headers
        assert 'href="https://c.example/c/bessemer-2021"' in body
        _, headers, _ = await site.get(f"/c/{PUBLIC}")
        assert headers["Content-Security-Policy"].endswith("frame-ancestors 'none'")


@pytest.mark.parametrize(
    ("web", "problem"),
    [
        ({"embed_origins": ["https://news.example/live"]}, "web.embed_origins[0]"),
        ({"embed_origins": ["javascript:alert(1)"]}, "web.embed_origins[0]"),
        ({"public_url": "https://c.example/?x=1"}, "web.public_url"),
        ({"public_url": "ftp://c.example"}, "web.public_url"),
        ({"streams_per_ip": 0}, "web.streams_per_ip"),
        ({"prot": 1}, "web.prot"),
    ],
)
def test_web_settings_are_checked(tmp_path: Path, web: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse({"web": web, "counts": []}, tmp_path / "t.toml")
    assert f"t.toml: {problem}:" in str(caught.value)


def test_check_config_names_the_public_pages(tmp_path: Path) -> None:

    assert summary(web_config(tmp_path, port=8081)).endswith(
        "public pages on 127.0.0.1:8081 (3 public)"
    )


async def test_the_store_says_which_counts_are_public(site: Site) -> None:
    from dataclasses import replace

    from bot.web.public import StorePublic

    lookup = StorePublic(site.app.db)
    assert [await lookup.is_public(c) for c in (PUBLIC, PRIVATE, "nope")] == [True, False, False]
    async with site.app.db.begin() as conn:
        private = await count_rows.get(conn, PRIVATE)
        public = await count_rows.get(conn, PUBLIC)
        assert private is not None
        assert public is not None
        await count_rows.upsert(conn, replace(private, public=True))  # made public in chat
        await count_rows.upsert(conn, replace(public, archived=True))  # put away
    assert await lookup.is_public(PRIVATE)
    assert not await lookup.is_public(PUBLIC)
    assert site.app.web is not None
    site.app.web.counts.forget(PRIVATE)
    site.app.web.counts.forget(PUBLIC)
    assert (await site.get(f"/c/{PRIVATE}"))[0] == 200
    assert (await site.get(f"/c/{PUBLIC}"))[0] == 404


async def test_any_updates_chart_is_drawn_again_from_the_store_after_a_restart(
    tmp_path: Path,
) -> None:
    """A preview that loads its image later (or a page left open over a restart) still gets
    it: the chart of every accepted update is drawn again from the store, not only the last 3."""
    clock = FakeClock()
    async with make_app(web_config(tmp_path), clock) as app:
        for k in range(1, 7):
            await ingest(app, clock, yes=10 * k, no=20 * k)
    async with make_app(web_config(tmp_path), clock) as app, aiohttp.ClientSession() as http:
        assert app.web is not None
        for seq in (1, 2, 6):
            async with http.get(f"{app.web.url}/c/{PUBLIC}/chart-{seq}.png") as resp:
                assert resp.status == 200, seq
                assert (await resp.read()).startswith(b"\x89PNG")
        async with http.get(f"{app.web.url}/c/{PUBLIC}/chart-1.svg") as resp:
            assert resp.status == 200
        for missing in (0, 7, 99):
            async with http.get(f"{app.web.url}/c/{PUBLIC}/chart-{missing}.svg") as resp:
                assert resp.status == 404


def test_check_config_says_previews_point_at_loopback_without_a_public_url(
    tmp_path: Path,
) -> None:
    said = summary(web_config(tmp_path, port=8081, web={"host": "0.0.0.0"}))
    assert said.endswith(
        "public pages on 0.0.0.0:8081 (3 public); link previews and page links point at "
        "127.0.0.1, which no reader reaches: set [web] public_url to where the public reaches "
        "the pages"
    )
    public = {"host": "0.0.0.0", "public_url": "https://count.example.org"}
    assert summary(web_config(tmp_path, port=8081, web=public)).endswith("(3 public)")


async def test_the_page_says_when_a_paused_count_resumes(site: Site) -> None:
    """Issue 30: a ``<time datetime>`` the page's script shows in the browser's zone (the
    page keeps its CSP: no inline script), and how long, as worded; gone once the time came."""
    from datetime import timedelta

    from bot.domain.schedule import Schedule, When
    from bot.store import schedules as schedule_rows

    await site.tally(yes=463, no=1100, challenged=505, state="paused")
    at = site.clock.now() + timedelta(hours=10)
    async with site.app.db.begin() as conn:
        await schedule_rows.put(
            conn, Schedule(PUBLIC, When.RESUMES, at), by="t", at=site.clock.now()
        )
    status, headers, body = await site.get(f"/c/{PUBLIC}")
    assert status == 200
    page = parsed(body)
    assert page.text["ahead"] == f"The count resumes at {at:%-d %b %Y %H:%M} UTC (in 10 hours)."
    iso = at.isoformat().replace("+00:00", "Z")
    assert ("time", {"datetime": iso}) in page.tags
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    site.clock.advance(10 * 3600)
    _, _, later = await site.get(f"/c/{PUBLIC}")
    assert "ahead" not in parsed(later).text
