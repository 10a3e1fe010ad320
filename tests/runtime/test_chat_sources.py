"""A source typed in chat (issue 15) never reaches inside the operator's network: not the
cloud metadata address, not the bot's own ops server (by address or by name), not a host off
the operator's list; and the scheduler follows a count's source as chat changes it, at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.commands.request import Reply, Request
from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef, Platform
from bot.ops import readiness
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock

HALL = ChannelRef(Platform("discord"), "81384788765712384", "1001")
MAKE = "create local-7 Local 7 strike vote choices=yes:Strike,no:No"


class Inside:
    """A service inside the operator's network, on loopback: it counts who reaches it."""

    def __init__(self) -> None:
        self.hits = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        return web.json_response({"yes": 1, "no": 2})


@pytest.fixture
async def inside() -> AsyncIterator[tuple[Inside, int]]:
    service = Inside()
    app = web.Application()
    app.router.add_get("/{tail:.*}", service.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield service, runner.addresses[0][1]
    finally:
        await runner.cleanup()


def config(tmp_path: Path, port: int, hosts: list[str] | None = None) -> Any:
    table: dict[str, Any] = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
        "server": {"host": "127.0.0.1", "port": port},
        "counts": [
            {
                "id": "bessemer-2021",
                "title": "Bessemer",
                "choices": [{"id": "yes"}, {"id": "no"}],
                "source": {"kind": "manual"},
            }
        ],
    }
    if hosts is not None:
        table["chat_sources"] = {"allowed_hosts": hosts}
    return parse(table, tmp_path / "tallybot.toml")


def app_for(cfg: Any, clock: FakeClock, *, poll: bool = False) -> App:
    adapter = RecordingAdapter(Platform("discord"))
    return App(
        cfg,
        {Platform("discord"): lambda commands: adapter},
        clock=clock,
        sleep=clock.sleep,
        poll=poll,
    )


async def ask(app: App, text: str) -> Reply:
    assert isinstance(app.clock, FakeClock)
    app.clock.advance(3)  # within the command limits
    return await app.commands.handle(Request(HALL, "42", "ana", text, tenant_admin=True))


async def test_addresses_inside_are_refused_as_they_are_typed(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int
) -> None:
    ops = unused_tcp_port
    async with app_for(config(tmp_path, ops), clock) as app:
        assert app.server is not None
        refused = [
            await ask(app, f"{MAKE} source={url}")
            for url in (
                "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
                f"http://127.0.0.1:{ops}/metrics",
                "http://[::1]:8080/readyz",
                "file:///etc/passwd",
            )
        ]
        async with app.db.connect() as conn:
            made = await count_rows.get(conn, "local-7")
    texts = [r.text for r in refused]
    assert texts[0].startswith("Error: source: ")
    assert "link-local" in texts[0]
    assert "loopback" in texts[1]
    assert "loopback" in texts[2]
    assert "http" in texts[3]
    assert not any(r.ok for r in refused)
    assert made is None  # nothing made


async def test_a_name_for_this_machine_is_refused_as_it_is_typed(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int, inside: tuple[Inside, int]
) -> None:
    """Not only at every fetch (a name's addresses are checked at connect, bot.base.egress): the
    names that always mean this machine are refused before any lookup."""
    service, port = inside
    async with app_for(config(tmp_path, unused_tcp_port), clock) as app:
        refused = [
            await ask(app, f"{MAKE} source={url}")
            for url in (
                f"http://localhost:{port}/feed.json",
                f"http://LocalHost.:{unused_tcp_port}/healthz",
                f"http://api.localhost:{port}/feed.json",
                f"http://ip6-localhost:{port}/feed.json",
            )
        ]
        made = await ask(app, f"{MAKE} source=manual")
        edited = await ask(app, f"edit local-7 source=http://localhost:{port}/feed.json")
        async with app.db.connect() as conn:
            source = await count_rows.source_json(conn, "local-7")
    for reply, host in zip(
        refused, ["localhost", "localhost", "api.localhost", "ip6-localhost"], strict=True
    ):
        assert not reply.ok
        assert reply.text == (
            f"Error: source: {host} does not resolve to a public internet address"
        )
    assert made.ok, made.text
    assert edited.text.startswith("Error: source: localhost does not resolve")
    assert source is None  # still manual
    assert service.hits == 0  # nothing inside was reached


async def test_only_the_operators_hosts_when_listed(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int
) -> None:
    cfg = config(tmp_path, unused_tcp_port, hosts=["*.example.org"])
    async with app_for(cfg, clock) as app:
        off = await ask(app, f"{MAKE} source=https://feeds.example.net/local7.json")
        on = await ask(app, f"{MAKE} source=https://feeds.example.org/local7.csv")
        async with app.db.connect() as conn:
            stored = await count_rows.source_json(conn, "local-7")
    async with app_for(cfg, clock) as again:  # a restart opens it again, from the store
        reopened = again.sources["local-7"]
    assert off.text.startswith("Error: source: ")
    assert "feeds.example.net" in off.text
    assert on.ok, on.text
    assert stored == '{"kind": "http_csv", "url": "https://feeds.example.org/local7.csv"}'
    assert reopened.polled


async def test_the_scheduler_follows_chat_at_once(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int
) -> None:
    async with app_for(config(tmp_path, unused_tcp_port), clock, poll=True) as app:
        # feeds.example.org is never fetched for real: the test needs only the job.
        url = "https://feeds.example.org/local7.json"
        steps = []
        for line in (
            f"{MAKE} source={url}",
            "archive local-7",
            "archive local-7 undo",
            "edit local-7 source=manual",
            f"edit local-7 source={url}",
            "delete local-7 confirm",
        ):
            reply = await ask(app, line)
            assert reply.ok, reply.text
            steps.append("local-7" in app.scheduler.jobs())
    # made, archived, back, made manual, a source again, deleted
    assert steps == [True, False, True, False, True, False]


async def test_a_broken_feed_set_in_chat_leaves_the_bot_ready(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int, inside: tuple[Inside, int]
) -> None:
    _, port = inside
    async with app_for(config(tmp_path, unused_tcp_port), clock) as app:
        # .invalid never resolves (RFC 6761): every poll fails, fast.
        assert (await ask(app, f"{MAKE} source=http://feed.invalid:{port}/feed.json")).ok
        for _ in range(6):  # stale: more failed polls in a row than the default allows
            await app.pollers["local-7"].poll()
        ready = await readiness.check(app)
        stale = app.health["local-7"].is_stale
    assert stale
    assert ready.ready, ready.to_json()
    assert "source:local-7" not in ready.to_json()["checks"]  # type: ignore[operator]


async def test_a_places_stale_source_is_told_in_that_place_not_the_operators(
    tmp_path: Path, clock: FakeClock, unused_tcp_port: int
) -> None:
    cfg = config(tmp_path, unused_tcp_port)
    operators = ChannelRef(Platform("discord"), "1", "9")
    cfg = replace(cfg, admins=cfg.admins.model_copy(update={"alerts": (operators,)}))
    adapter = RecordingAdapter(Platform("discord"))
    app = App(
        cfg,
        {Platform("discord"): lambda commands: adapter},
        clock=clock,
        sleep=clock.sleep,
        poll=False,
    )
    async with app:
        assert (await ask(app, f"{MAKE} source=http://feed.invalid/feed.json")).ok
        for _ in range(6):  # stale: more failed polls in a row than the default allows
            await app.pollers["local-7"].poll()
        await app.idle()
    told = [m.text for m in adapter.messages(HALL) if isinstance(m, Notice)]
    assert len(told) == 1
    assert "local-7 is stale" in told[0]
    assert adapter.messages(operators) == []
