"""The HTTP sources against a real aiohttp server on loopback (127.0.0.1, a free port)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from aiohttp import web

from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.errors import ConfigError, PermanentSourceError, TransientSourceError
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.http import HttpOptions, HttpTransientError, public_url
from bot.ingest.sources.http_csv import HttpCsvSource
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.mapping import FieldMap, StateValues
from bot.testing.clock import FakeClock

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
    eligible=5876,
    received=3215,
)
FIELDS = FieldMap(
    votes={"yes": "results.0.count", "no": "results.1.count"},
    void="void",
    challenged="challenged",
    received="received",
    state="status",
)
STATES = StateValues({"in progress": "counting", "recess": "paused", "certified": "final"})


def feed(yes: object = 463, no: object = 1100, status: object = "recess", **extra: object) -> bytes:
    doc: dict[str, object] = {
        "results": [{"choice": "Yes", "count": yes}, {"choice": "No", "count": no}],
        "void": 10,
        "challenged": 505,
        "received": 3215,
        "status": status,
        **extra,
    }
    return json.dumps(doc).encode()


@dataclass
class Feed:
    """What the test server answers on /feed, and what it was asked."""

    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    etag: str | None = None
    last_modified: str | None = None
    hang: bool = False
    stream_chunks: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(dict(request.headers))
        if self.hang:
            await self.release.wait()  # set only at teardown
        if self.etag is not None and request.headers.get("If-None-Match") == self.etag:
            return web.Response(status=304)
        headers = dict(self.headers)
        if self.etag is not None:
            headers["ETag"] = self.etag
        if self.last_modified is not None:
            headers["Last-Modified"] = self.last_modified
        if self.stream_chunks:
            resp = web.StreamResponse(status=self.status, headers=headers)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for _ in range(self.stream_chunks):
                await resp.write(b"x" * 1024)
            await resp.write_eof()
            return resp
        return web.Response(
            status=self.status, body=self.body, headers=headers, content_type=self.content_type
        )


@dataclass
class Server:
    feed: Feed
    url: str


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    feed = Feed()
    app = web.Application()
    app.router.add_get("/feed", feed.handle)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield Server(feed, f"http://{host}:{port}/feed")
    finally:
        feed.release.set()
        await runner.cleanup()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def json_source(url: str, clock: FakeClock, **options: object) -> HttpJsonSource:
    return HttpJsonSource(
        COUNT,
        HttpOptions(url, **options),  # type: ignore[arg-type]
        clock=clock,
        fields=FIELDS,
        states=STATES,
        name="nlrb-feed",
    )


async def test_json_feed_is_read_through_the_mapping(server: Server, clock: FakeClock) -> None:
    server.feed.body = feed(yes=463, no="1100")
    async with json_source(server.url, clock) as source:
        tally = await source.fetch()
    assert tally == Tally(
        count_id="bessemer-2021",
        votes={"yes": 463, "no": 1100},
        observed_at=clock.now(),
        source="nlrb-feed",
        void=10,
        challenged=505,
        received=3215,
        state=TallyState.PAUSED,
        seq=0,
    )
    assert list(tally.votes) == ["yes", "no"]


async def test_unmapped_optional_fields_take_their_defaults(
    server: Server, clock: FakeClock
) -> None:
    server.feed.body = b'{"yes": 1, "no": 2}'
    async with HttpJsonSource(COUNT, HttpOptions(server.url), clock=clock) as source:
        tally = await source.fetch()
    assert tally is not None
    assert (dict(tally.votes), tally.void, tally.challenged, tally.received, tally.state) == (
        {"yes": 1, "no": 2},
        0,
        0,
        None,
        TallyState.COUNTING,
    )
    assert tally.source == "http-json"


async def test_etag_and_last_modified_are_sent_back_and_304_means_none(
    server: Server, clock: FakeClock
) -> None:
    server.feed.body = feed()
    server.feed.etag = '"v1"'
    server.feed.last_modified = "Thu, 08 Apr 2021 22:40:00 GMT"
    async with json_source(server.url, clock) as source:
        assert await source.fetch() is not None
        assert await source.fetch() is None
        server.feed.body = feed(yes=500)
        server.feed.etag = '"v2"'
        changed = await source.fetch()
    first, second, third = server.feed.requests
    assert "If-None-Match" not in first
    assert "If-Modified-Since" not in first
    assert second["If-None-Match"] == '"v1"'
    assert second["If-Modified-Since"] == "Thu, 08 Apr 2021 22:40:00 GMT"
    assert third["If-None-Match"] == '"v1"'
    assert changed is not None
    assert changed.votes["yes"] == 500


async def test_an_identical_body_or_identical_figures_give_none(
    server: Server, clock: FakeClock
) -> None:
    server.feed.body = feed()
    async with json_source(server.url, clock) as source:
        assert await source.fetch() is not None
        assert await source.fetch() is None  # byte-identical body
        server.feed.body = feed(updated="22:41")  # different bytes, same figures
        assert await source.fetch() is None
        server.feed.body = feed(status="certified")
        final = await source.fetch()
    assert final is not None
    assert final.state is TallyState.FINAL
    assert len(server.feed.requests) == 4


async def test_a_body_that_failed_to_parse_is_not_remembered(
    server: Server, clock: FakeClock
) -> None:
    server.feed.body = b'{"results": ['
    server.feed.etag = '"broken"'
    async with json_source(server.url, clock) as source:
        for _ in range(2):
            with pytest.raises(PermanentSourceError, match="not valid JSON"):
                await source.fetch()
    assert all("If-None-Match" not in r for r in server.feed.requests)


async def test_a_server_that_does_not_answer_in_time_is_transient(
    server: Server, clock: FakeClock
) -> None:
    server.feed.hang = True
    async with json_source(server.url, clock, timeout=0.05) as source:
        with pytest.raises(TransientSourceError, match=r"within 0\.05 s") as info:
            await source.fetch()
    assert isinstance(info.value, HttpTransientError)
    assert info.value.status is None
    assert isinstance(info.value.__cause__, TimeoutError)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
async def test_server_errors_and_rate_limits_are_transient(
    server: Server, clock: FakeClock, status: int
) -> None:
    server.feed.status = status
    async with json_source(server.url, clock) as source:
        with pytest.raises(TransientSourceError, match=f"HTTP {status}") as info:
            await source.fetch()
    assert isinstance(info.value, HttpTransientError)
    assert info.value.status == status
    assert info.value.retry_after is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
async def test_client_errors_are_permanent(server: Server, clock: FakeClock, status: int) -> None:
    server.feed.status = status
    async with json_source(server.url, clock) as source:
        with pytest.raises(PermanentSourceError, match=f"HTTP {status}"):
            await source.fetch()


async def test_retry_after_seconds_are_kept_on_the_error(server: Server, clock: FakeClock) -> None:
    server.feed.status = 429
    server.feed.headers = {"Retry-After": "7"}
    async with json_source(server.url, clock) as source:
        with pytest.raises(HttpTransientError, match="retry after 7 s") as info:
            await source.fetch()
    assert info.value.retry_after == 7.0


async def test_retry_after_as_a_date_is_measured_on_the_clock(
    server: Server, clock: FakeClock
) -> None:
    later = clock.now() + timedelta(seconds=90)
    server.feed.status = 503
    server.feed.headers = {"Retry-After": later.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    async with json_source(server.url, clock) as source:
        with pytest.raises(HttpTransientError) as info:
            await source.fetch()
    assert info.value.retry_after == 90.0


async def test_a_body_over_the_cap_is_refused_by_content_length(
    server: Server, clock: FakeClock
) -> None:
    server.feed.body = feed(padding="x" * 200)
    async with json_source(server.url, clock, max_bytes=100) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    length = len(server.feed.body)
    assert f"body larger than 100 bytes (Content-Length {length})" in str(info.value)


async def test_a_streamed_body_over_the_cap_is_refused(server: Server, clock: FakeClock) -> None:
    server.feed.stream_chunks = 64  # 64 KiB, chunked: no Content-Length to go by
    async with json_source(server.url, clock, max_bytes=10_000) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    assert str(info.value).endswith("body larger than 10000 bytes")  # no length to go by


async def test_malformed_json_names_the_problem(server: Server, clock: FakeClock) -> None:
    server.feed.body = b'{"results": [1, 2,]}'
    async with json_source(server.url, clock) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    message = str(info.value)
    assert "not valid JSON" in message
    assert "line 1 column 19" in message
    assert "application/json" in message


async def test_a_missing_mapped_field_names_the_path(server: Server, clock: FakeClock) -> None:
    server.feed.body = b'{"results": [{"count": 463}], "void": 0, "challenged": 0, "received": 1}'
    async with json_source(server.url, clock) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    message = str(info.value)
    assert "votes.no" in message
    assert "'results.1.count'" in message
    assert "has only 1 item" in message
    assert message.startswith(public_url(server.url))


@pytest.mark.parametrize(
    ("value", "shown", "problem"),
    [
        (-3, "-3", "is negative"),
        ("-3", "'-3'", "is negative"),
        (1.5, "1.5", "is not an integer"),
        (463.0, "463.0", "is not an integer"),
        ("12a", "'12a'", "is not a whole number"),
        ("1,100", "'1,100'", "is not a whole number"),
        (True, "True", "is not an integer"),
        ([1], "[1]", "is not an integer"),
        (None, "", "the value is empty"),
    ],
)
async def test_a_bad_figure_names_the_field_and_the_value(
    server: Server, clock: FakeClock, value: object, shown: str, problem: str
) -> None:
    server.feed.body = feed(no=value)
    async with json_source(server.url, clock) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    message = str(info.value)
    assert "votes.no (JSON path 'results.1.count')" in message
    assert problem in message
    assert shown in message


async def test_an_unknown_state_word_is_permanent(server: Server, clock: FakeClock) -> None:
    server.feed.body = feed(status="adjourned")
    async with json_source(server.url, clock) as source:
        with pytest.raises(PermanentSourceError, match="'adjourned' is not a known state"):
            await source.fetch()


async def test_headers_are_sent(server: Server, clock: FakeClock) -> None:
    server.feed.body = feed()
    async with json_source(server.url, clock, headers={"Authorization": "Bearer t0k3n"}) as s:
        await s.fetch()
    (seen,) = server.feed.requests
    assert seen["Authorization"] == "Bearer t0k3n"
    assert seen["Accept"] == "application/json"
    assert seen["User-Agent"].startswith("tallybot/")


async def test_a_refused_connection_is_transient(clock: FakeClock) -> None:
    with socket.socket() as s:  # a port that was free a moment ago, now closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with json_source(f"http://127.0.0.1:{port}/feed", clock) as source:
        with pytest.raises(TransientSourceError, match="ClientConnectorError"):
            await source.fetch()


async def test_fetch_outside_the_lifecycle_is_a_programming_error(clock: FakeClock) -> None:
    source = json_source("http://127.0.0.1:9/feed", clock)
    with pytest.raises(RuntimeError, match="outside 'async with'"):
        await source.fetch()


def test_bad_mappings_are_refused_when_the_source_is_built(clock: FakeClock) -> None:
    with pytest.raises(ConfigError, match="unknown choice 'maybe'"):
        HttpJsonSource(
            COUNT,
            HttpOptions("http://x/"),
            clock=clock,
            fields=FieldMap(votes={"yes": "a", "no": "b", "maybe": "c"}),
        )
    with pytest.raises(ConfigError, match="empty step"):
        HttpJsonSource(
            COUNT,
            HttpOptions("http://x/"),
            clock=clock,
            fields=FieldMap({"yes": "a..b", "no": "c"}),
        )


def test_messages_never_show_query_strings_or_user_info() -> None:
    assert public_url("https://u:pw@example.org/f.json?key=SECRET#x") == (
        "https://example.org/f.json"
    )


SHEET = (
    "\ufeffTime , YES,no ,Void,Challenged,Received,State\r\n"
    "21:05,120,310,3,40,3215,in progress\r\n"
    '22:40,463,"1,100",10,505,3215,Recess\r\n'
    "23:00,,,,,,\r\n"
    ",,,,,,\r\n"
).encode()
CSV_FIELDS = FieldMap(
    votes={"yes": "Yes", "no": "No"},
    void="void",
    challenged="CHALLENGED",
    received="received",
    state="state",
)


async def test_a_published_sheet_is_read_over_http(server: Server, clock: FakeClock) -> None:
    server.feed.body = SHEET
    server.feed.content_type = "text/csv"
    source = HttpCsvSource(
        COUNT,
        HttpOptions(server.url),
        clock=clock,
        fields=CSV_FIELDS,
        states=STATES,
        name="volunteer-sheet",
    )
    async with source:
        tally = await source.fetch()
        again = await source.fetch()
    assert tally == Tally(
        "bessemer-2021",
        {"yes": 463, "no": 1100},
        clock.now(),
        "volunteer-sheet",
        void=10,
        challenged=505,
        received=3215,
        state=TallyState.PAUSED,
    )
    assert again is None
    assert server.feed.requests[0]["Accept"] == "text/csv"


async def test_a_sheet_in_pairs_layout_is_read_over_http(server: Server, clock: FakeClock) -> None:
    server.feed.body = b'field,value\nYes,463\nNo,"1,100"\n'
    server.feed.content_type = "text/csv"
    source = HttpCsvSource(COUNT, HttpOptions(server.url), clock=clock, layout=CsvLayout.PAIRS)
    async with source:
        tally = await source.fetch()
    assert tally is not None
    assert dict(tally.votes) == {"yes": 463, "no": 1100}


async def test_an_html_page_instead_of_csv_is_permanent(server: Server, clock: FakeClock) -> None:
    server.feed.body = b"<!DOCTYPE html><html><body>Sign in</body></html>"
    server.feed.content_type = "text/html"
    source = HttpCsvSource(COUNT, HttpOptions(server.url), clock=clock, fields=CSV_FIELDS)
    async with source:
        with pytest.raises(PermanentSourceError, match="HTML page, not CSV"):
            await source.fetch()
