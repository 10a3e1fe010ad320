"""The page's feeds over HTTP: the Atom feed (checked against RFC 4287 by parsing it) and the JSON
document of the standing; the chat's own words, hostile text as text, the page's 404 byte for
byte, the same bytes until the next accepted tally, and the feed's limit."""

from __future__ import annotations

import asyncio
import json
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from bot.domain import format as fmt
from bot.domain.safe_text import clean
from bot.store import counts as count_rows
from bot.testing.clock import FakeClock
from bot.web import atom, documents
from bot.web.standing import VERSION, document, encode, rfc3339
from tests.conftest import PG_URL
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
    web_config,
)
from tests.web.test_feed import schema

__all__ = ["schema"]  # the PostgreSQL schema fixture of test_feed, used here too

NS = {"a": "http://www.w3.org/2005/Atom"}


def text_of(element: ET.Element, path: str) -> str:
    found = element.find(path, NS)
    assert found is not None, path
    return found.text or ""


def rfc3339_time(value: str) -> datetime:
    """An RFC 3339 time (the date-time of section 5.6: a ``T``, seconds, an offset or ``Z``)."""
    assert value[10] == "T", value
    assert value.endswith("Z") or value[-6] in "+-", value
    at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert at.tzinfo is not None
    return at


def check_rfc4287(body: bytes) -> ET.Element:
    """The feed parsed, after checking what RFC 4287 requires of a feed and its entries."""
    feed = ET.fromstring(body)
    assert feed.tag == "{http://www.w3.org/2005/Atom}feed"
    for name in ("id", "title", "updated"):  # 4.1.1: exactly one each
        assert len(feed.findall(f"a:{name}", NS)) == 1, name
    rfc3339_time(text_of(feed, "a:updated"))
    authors = feed.findall("a:author", NS)
    entries = feed.findall("a:entry", NS)
    assert authors or all(e.findall("a:author", NS) for e in entries)
    for author in authors:
        assert text_of(author, "a:name")
    assert uuid.UUID(text_of(feed, "a:id").removeprefix("urn:uuid:"))
    for link in feed.findall("a:link", NS):
        assert link.get("href")
    alternates = [(k.get("type"), k.get("hreflang")) for k in feed.findall("a:link", NS)]
    assert len(alternates) == len(set(alternates))  # 4.1.1: no two alike
    for e in entries:
        for name in ("id", "title", "updated"):  # 4.1.2: exactly one each
            assert len(e.findall(f"a:{name}", NS)) == 1, name
        rfc3339_time(text_of(e, "a:updated"))
        assert e.find("a:content", NS) is not None or e.find("a:link[@rel='alternate']", NS)
        for name in ("title", "content"):
            assert e.find(f"a:{name}", NS).get("type") == "text"  # type: ignore[union-attr]
    ids = [text_of(e, "a:id") for e in entries]
    assert len(ids) == len(set(ids))
    return feed


async def fetch(site: Site, path: str, **kwargs: Any) -> tuple[int, CIMultiDict[str], bytes]:
    async with site.http.get(site.url + path, **kwargs) as resp:
        return resp.status, CIMultiDict(resp.headers), await resp.read()


async def test_the_feed_is_valid_atom_with_each_significant_update_as_published(
    site: Site,
) -> None:
    first = await site.tally(yes=84, no=201)
    routine = await site.tally(yes=90, no=210)
    assert not routine.detection.significant  # type: ignore[union-attr]
    lead = await site.tally(yes=700, no=300)
    assert lead.detection.significant  # type: ignore[union-attr]
    status, headers, body = await fetch(site, f"/c/{PUBLIC}/feed.atom")
    assert status == 200
    assert headers["Content-Type"] == "application/atom+xml; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    feed = check_rfc4287(body)
    page = f"{site.url}/c/{PUBLIC}"
    assert text_of(feed, "a:title") == "Amazon BHM1 union election, Bessemer AL"
    assert feed.find("a:link[@rel='alternate']", NS).get("href") == page  # type: ignore[union-attr]
    self_link = feed.find("a:link[@rel='self']", NS)
    assert self_link is not None
    assert self_link.get("href") == f"{page}/feed.atom"
    entries = feed.findall("a:entry", NS)
    assert [text_of(e, "a:title") for e in entries] == [
        lead.message.headline,  # type: ignore[union-attr]
        first.message.headline,  # type: ignore[union-attr]
    ]  # newest first; the routine update is not news
    assert text_of(feed, "a:updated") == text_of(entries[0], "a:updated")
    assert rfc3339_time(text_of(entries[0], "a:updated")) == lead.tally.observed_at
    content = text_of(entries[0], "a:content")
    for choice in lead.message.choices:  # type: ignore[union-attr]
        assert choice.label in content
        assert choice.votes_text in content
        assert choice.share_text in content
    assert "update #3" in content
    # the ids are stable: the same feed from a server started afresh would carry them
    ids = [text_of(e, "a:id") for e in entries]
    assert ids[0] == uuid.uuid5(uuid.NAMESPACE_URL, f"{page}#update-3").urn


async def test_a_count_without_figures_has_a_valid_empty_feed(site: Site) -> None:
    status, _, body = await fetch(site, f"/c/{PUBLIC}/feed.atom")
    assert status == 200
    feed = check_rfc4287(body)
    assert feed.findall("a:entry", NS) == []
    status, _, body = await fetch(site, f"/c/{PUBLIC}.json")
    assert status == 200
    doc = json.loads(body)
    assert (doc["seq"], doc["figures"], doc["updated"]) == (0, [], None)
    assert doc["headline"] == "No figures yet."


async def test_hostile_text_comes_back_as_text(site: Site) -> None:
    result = await site.tally(HOSTILE, a=3, b=4)
    _, _, body = await fetch(site, f"/c/{HOSTILE}/feed.atom")
    assert b"<script>" not in body
    assert b"</title><b>" not in body
    feed = check_rfc4287(body)
    assert text_of(feed, "a:title") == clean(HOSTILE_TITLE)
    (only,) = feed.findall("a:entry", NS)
    assert text_of(only, "a:title") == result.message.headline  # type: ignore[union-attr]
    assert HOSTILE_LABEL in text_of(only, "a:content")
    _, headers, raw = await fetch(site, f"/c/{HOSTILE}.json")
    doc = json.loads(raw)
    assert doc["title"] == HOSTILE_TITLE
    assert doc["figures"][0]["label"] == HOSTILE_LABEL
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_text_xml_and_utf_8_cannot_hold_is_replaced() -> None:
    odd = "Yes \ud800 \ufffe \x00 & </title>"
    at = datetime(2021, 4, 8, 18, tzinfo=UTC)
    body = atom.render(
        title=odd,
        subtitle=odd,
        page_url="https://count.example.org/c/x",
        updated=at,
        entries=[atom.FeedEntry(1, odd, odd, at)],
    )
    feed = check_rfc4287(body)
    assert text_of(feed, "a:title") == "Yes \ufffd \ufffd  & </title>"
    doc = json.loads(encode({"headline": odd}))
    assert doc["headline"] == "Yes \ufffd \ufffe \x00 & </title>"  # JSON holds the rest escaped


async def test_the_json_is_the_standing_in_the_chats_words(site: Site) -> None:
    await site.tally(yes=84, no=201, challenged=10)
    result = await site.tally(yes=463, no=1100, challenged=505)
    status, headers, body = await fetch(site, f"/c/{PUBLIC}.json")
    assert status == 200
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    doc = json.loads(body)
    async with site.app.db.connect() as conn:
        count = await count_rows.get(conn, PUBLIC)
    assert count is not None
    status_message = fmt.for_status(count, result.tally)
    assert doc["version"] == VERSION == 1
    assert (doc["count_id"], doc["seq"], doc["state"], doc["state_text"]) == (
        PUBLIC,
        2,
        "counting",
        "Counting",
    )
    assert doc["url"] == f"{site.url}/c/{PUBLIC}"
    assert doc["headline"] == result.message.headline  # type: ignore[union-attr]
    assert doc["sentences"] == list(status_message.lines)
    assert [f["votes"] for f in doc["figures"]] == [463, 1100]
    assert [f["votes_text"] for f in doc["figures"]] == ["463", "1,100"]
    assert doc["figures"][1]["note"] == "needs 508 more to clinch"
    assert doc["footer"] == str(status_message.footer)
    assert doc["leader"] == "no"
    assert doc["winner"] is None
    assert doc["updated"] == rfc3339(result.tally.observed_at)
    # a plug-in sending an update's message sends the same document
    message = result.message
    assert message is not None
    sent = document(
        message,
        state="counting",
        state_text="Counting",
        updated=result.tally.observed_at,
        url=doc["url"],
    )
    assert {k: v for k, v in sent.items() if k != "sentences"} == {
        k: v for k, v in doc.items() if k != "sentences"
    }


async def test_anything_not_public_is_the_pages_404_byte_for_byte(site: Site) -> None:
    await site.tally(PRIVATE, ana=3, ben=4)
    answers = []
    for path in (
        f"/c/{PRIVATE}",
        f"/c/{PRIVATE}/feed.atom",
        f"/c/{PRIVATE}.json",
        "/c/no-such-count/feed.atom",
        "/c/no-such-count.json",
        "/c/Bad%20Id.json",
        f"/c/{PUBLIC}/feed.atom/x",
        f"/c/{PUBLIC}.json.x",
    ):
        status, headers, body = await fetch(site, path)
        headers.pop("Date")
        answers.append((status, headers, body))
    assert answers[0][0] == 404
    assert all(a == answers[0] for a in answers)


async def test_the_same_bytes_until_the_next_accepted_tally(site: Site) -> None:
    await site.tally(yes=84, no=201)
    for path in (f"/c/{PUBLIC}/feed.atom", f"/c/{PUBLIC}.json"):
        _, headers, body = await fetch(site, path)
        site.clock.advance(3600)  # nothing in them moves with the clock
        _, again_headers, again = await fetch(site, path)
        assert again == body
        assert again_headers["ETag"] == headers["ETag"]
        assert headers["Cache-Control"] == "no-cache"
        status, _, empty = await fetch(site, path, headers={"If-None-Match": headers["ETag"]})
        assert (status, empty) == (304, b"")
    web = site.app.web
    assert web is not None
    page = web.page_url(PUBLIC)
    made = await web.documents.standing(PUBLIC, page)
    assert made is not None
    assert made is await web.documents.standing(PUBLIC, page)
    body = made.body
    await site.tally(yes=700, no=300)
    crowd = await asyncio.gather(*(web.documents.feed(PUBLIC, page) for _ in range(8)))
    assert all(made is crowd[0] for made in crowd)  # made once for all of them
    for path in (f"/c/{PUBLIC}/feed.atom", f"/c/{PUBLIC}.json"):
        status, headers, after = await fetch(site, path)
        assert status == 200
        assert after != body
    _, _, doc = await fetch(site, f"/c/{PUBLIC}.json")
    assert json.loads(doc)["seq"] == 2


async def test_the_feed_carries_at_most_the_latest_feed_entries(site: Site) -> None:
    assert documents.FEED_ENTRIES == 50
    seqs = []
    for i in range(documents.FEED_ENTRIES + 2):
        ahead, behind = 200 + i * 20, 190 + i * 20  # the lead changes hands every time
        result = (
            await site.tally(yes=ahead, no=behind)
            if i % 2
            else await site.tally(yes=behind, no=ahead)
        )
        assert result.detection.significant  # type: ignore[union-attr]
        seqs.append(result.tally.seq)
    _, _, body = await fetch(site, f"/c/{PUBLIC}/feed.atom")
    entries = check_rfc4287(body).findall("a:entry", NS)
    assert len(entries) == documents.FEED_ENTRIES
    page = f"{site.url}/c/{PUBLIC}"
    latest = [uuid.uuid5(uuid.NAMESPACE_URL, f"{page}#update-{s}").urn for s in seqs[::-1]]
    assert [text_of(e, "a:id") for e in entries] == latest[: documents.FEED_ENTRIES]


async def test_the_page_names_its_feeds(site: Site) -> None:
    _, _, html = await site.get(f"/c/{PUBLIC}")
    page = f"{site.url}/c/{PUBLIC}"
    assert f'<link rel="alternate" type="application/atom+xml" href="{page}/feed.atom"' in html
    assert f'<link rel="alternate" type="application/json" href="{page}.json"' in html


async def test_a_count_at_every_limit_has_a_valid_feed(site: Site) -> None:
    await site.tally(LONGEST, a=1, b=2, c=3)
    _, _, body = await fetch(site, f"/c/{LONGEST}/feed.atom")
    (only,) = check_rfc4287(body).findall("a:entry", NS)
    assert LONGEST_WORD in text_of(only, "a:content")
    _, _, raw = await fetch(site, f"/c/{LONGEST}.json")
    assert json.loads(raw)["figures"][0]["label"] == LONGEST_WORD


@pytest.mark.postgres
async def test_every_instance_serves_the_same_bytes_of_the_latest_tally(
    tmp_path: Path, schema: str
) -> None:
    clock = FakeClock(FakeClock().now() + timedelta(hours=6))
    web = {"public_url": "https://count.example.org"}
    a_app = make_app(web_config(tmp_path / "a", store_url=PG_URL, web=web), clock, schema=schema)
    b_app = make_app(web_config(tmp_path / "b", store_url=PG_URL, web=web), clock, schema=schema)
    async with a_app as a, b_app as b, aiohttp.ClientSession() as http:
        assert a.web is not None
        assert b.web is not None

        async def both(path: str) -> tuple[bytes, bytes]:
            out = []
            for server in (a.web, b.web):
                assert server is not None
                async with http.get(server.url + path) as resp:
                    assert resp.status == 200
                    out.append(await resp.read())
            return out[0], out[1]

        await ingest(a, clock, yes=84, no=201)
        for path in (f"/c/{PUBLIC}/feed.atom", f"/c/{PUBLIC}.json"):
            on_a, on_b = await both(path)
            assert on_a == on_b
        await ingest(a, clock, yes=700, no=300)  # B made its documents at update #1
        feed_a, feed_b = await both(f"/c/{PUBLIC}/feed.atom")
        assert feed_a == feed_b
        assert len(check_rfc4287(feed_b).findall("a:entry", NS)) == 2
        json_a, json_b = await both(f"/c/{PUBLIC}.json")
        assert json_a == json_b
        assert json.loads(json_b)["seq"] == 2
        assert json.loads(json_b)["url"] == "https://count.example.org/c/bessemer-2021"
