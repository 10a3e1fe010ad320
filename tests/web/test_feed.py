"""Several instances on one PostgreSQL store: a viewer is served by whichever instance it
reached, whichever instance accepted the tally (``NOTIFY`` in the accepting transaction,
``LISTEN`` on every instance), and a listening connection that is cut off listens again and
catches up on what was accepted meanwhile."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import text

from bot.runtime.app import App
from bot.store import Database, notices
from bot.testing.clock import FakeClock
from tests.conftest import PG_URL, _pg_execute, _require_postgres
from tests.web.conftest import HOSTILE, PUBLIC, ingest, make_app, web_config
from tests.web.test_stream import read_event

pytestmark = pytest.mark.postgres


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    await _require_postgres()
    name = f"test_{uuid.uuid4().hex[:16]}"
    try:
        yield name
    finally:
        await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def instance(tmp: Path, schema: str, clock: FakeClock) -> App:
    """One instance of the bot on the shared store, its public pages on a port of its own."""
    return make_app(web_config(tmp, store_url=PG_URL), clock, schema=schema)


async def announce_then_fail(db: Database, schema: str) -> None:
    async with db.begin() as conn:
        await notices.announce(conn, schema, PUBLIC, 1)
        raise ZeroDivisionError


async def test_the_notice_goes_with_the_commit_and_only_then(schema: str) -> None:
    heard: list[str] = []
    got = asyncio.Event()

    def hear(payload: str) -> None:
        heard.append(payload)
        got.set()

    async with Database(PG_URL, schema=schema) as db, db.listening(notices.channel(schema), hear):
        with pytest.raises(ZeroDivisionError):  # rolled back: never announced
            await announce_then_fail(db, schema)
        async with db.begin() as conn:
            await notices.announce(conn, schema, PUBLIC, 2)
        async with db.begin() as conn:  # another store's channel: not heard here
            await notices.announce(conn, schema + "x", PUBLIC, 3)
        async with db.begin() as conn:
            await notices.announce(conn, schema, "other", 4)
        async with asyncio.timeout(5):
            while len(heard) < 2:
                got.clear()
                await got.wait()
    assert [notices.heard(p) for p in heard] == [(PUBLIC, 2), ("other", 4)]
    assert notices.heard("garbage") is None
    assert notices.heard('{"count": "x", "seq": true}') is None


async def test_a_viewer_of_one_instance_sees_the_tallies_of_another(
    tmp_path: Path, schema: str
) -> None:
    clock = FakeClock(FakeClock().now() + timedelta(hours=6))
    a_app = instance(tmp_path / "a", schema, clock)
    b_app = instance(tmp_path / "b", schema, clock)
    async with a_app as a, b_app as b, aiohttp.ClientSession() as http:
        assert a.web is not None
        assert b.web is not None
        assert b.web.feed is not None
        await ingest(a, clock, yes=84, no=201)
        async with (
            http.get(f"{b.web.url}/c/{PUBLIC}/events?last=0") as on_b,
            http.get(f"{a.web.url}/c/{PUBLIC}/events?last=0") as on_a,
        ):
            for resp in (on_a, on_b):
                assert (await read_event(resp))["id"] == "1"  # caught up from the store
            await ingest(a, clock, yes=463, no=1100)
            for resp in (on_b, on_a):  # on A by its own hook and its notice: once
                assert (await read_event(resp))["id"] == "2"
            await ingest(b, clock, yes=500, no=1200)
            for resp in (on_a, on_b):
                assert (await read_event(resp))["id"] == "3"

            await ingest(a, clock, HOSTILE, a=1, b=2)  # B hears of it; nobody watches it there

            # B's listening connection is cut off; tallies are accepted by A while B is away.
            feed = b.web.feed
            assert feed.listening is not None
            assert feed.connected == 1
            away, back = asyncio.Event(), asyncio.Event()

            async def held(seconds: float) -> None:
                away.set()
                await back.wait()

            feed.sleep = held
            async with a.db.begin() as conn:
                await conn.execute(
                    text("SELECT pg_terminate_backend(:pid)"), {"pid": feed.listening.pid}
                )
            async with asyncio.timeout(10):
                await away.wait()
            assert feed.listening is None
            await ingest(a, clock, yes=600, no=1300)
            await ingest(a, clock, HOSTILE, a=3, b=4)
            assert (await read_event(on_a))["id"] == "4"
            back.set()  # B listens again and catches up
            assert (await read_event(on_b))["id"] == "4"
            assert feed.connected == 2
            async with http.get(f"{b.web.url}/c/{HOSTILE}/events?last=1") as late:
                assert (await read_event(late))["id"] == "2"  # from the store, not missed
            await ingest(a, clock, yes=700, no=1400)
            for resp in (on_a, on_b):
                assert (await read_event(resp))["id"] == "5"
        assert a.web.broadcaster.dropped == b.web.broadcaster.dropped == 0
