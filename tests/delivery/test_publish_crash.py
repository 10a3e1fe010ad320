"""kill -9 between a crosspost and its record, with the real bot (``python -m bot run``): the
restart publishes again, Discord answers that the message is published already (40033), and
every following channel has the final once (issue 31)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from bot.base.clock import SystemClock
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Hear, Platform, Wants
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus
from tests.delivery.crash_run import start_bot, stop, toml_value
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.models import FLAG_IS_CROSSPOST
from tests.helpers import bessemer, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def crossposts(fake: FakeDiscord) -> list[int]:
    return [r.status for r in fake.requests if r.path.endswith("/crosspost")]


async def test_kill_9_between_the_crosspost_and_its_record_publishes_once(
    tmp_path: Path,
) -> None:
    store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    async with FakeDiscord() as fake:
        guild = fake.add_guild("Bessemer Watch")
        announce = fake.add_channel(guild, "announcements", kind=5)
        followers = [fake.add_channel(fake.add_guild(f"Local {i}"), "news") for i in range(3)]
        for channel in followers:
            fake.follow(announce, channel)
        config = tmp_path / "tallybot.toml"
        config.write_text(
            "\n".join(
                [
                    f"[store]\nurl = {toml_value(store)}",
                    f"[discord]\napi_base = {toml_value(fake.base_url)}",
                    f"gateway_url = {toml_value(fake.gateway_url)}",
                    f"guilds = [{guild}]",
                    "[[counts]]",
                    'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
                    'tie_holder = "no"\nreceived = 3215',
                    'choices = [{id = "yes", label = "Yes (RWDSU)"}, '
                    '{id = "no", label = "No union"}]',
                    'source = {kind = "manual"}',
                ]
            )
            + "\n"
        )
        clock = SystemClock()
        async with Database(store) as db:
            async with db.begin() as conn:
                await count_rows.upsert(conn, bessemer())
                await sub_rows.subscribe(
                    conn,
                    ChannelRef(Platform("discord"), str(guild), str(announce)),
                    "bessemer-2021",
                    Wants(frozenset({Hear.FINAL}), publish=True),
                    by="t",
                    at=clock.now(),
                )
            final = tally(738, 1798, challenged=505, received=3041, state=TallyState.FINAL)
            assert (await Pipeline(db, clock).ingest(final)).message is not None
        env = {
            **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
            "DISCORD_TOKEN": fake.token,
        }
        log = tmp_path / "bot.log"

        def copies() -> list[int]:
            return [
                sum(1 for m in fake.messages(c) if m.flags & FLAG_IS_CROSSPOST) for c in followers
            ]

        held = fake.hangs.hang(f"published {announce}")
        first = await start_bot(config, env, log)
        try:
            await fake.wait_for(lambda: copies() == [1, 1, 1], timeout=60)
        except TimeoutError:
            raise AssertionError(log.read_text()[-3000:]) from None
        finally:
            await stop(first, signal.SIGKILL)  # published; its answer never came back
        held.set()
        async with Database(store) as db, db.connect() as conn:
            (doubt,) = [
                d
                for d in await outbox.in_doubt(conn, Platform("discord"))
                if d.action is DeliveryAction.PUBLISH
            ]
        assert doubt.sending_at is not None  # noted before it went out

        second = await start_bot(config, env, log)
        try:
            await fake.wait_for(lambda: len(crossposts(fake)) >= 2, timeout=60)
            async with asyncio.timeout(30):  # the answer recorded (polled: another process)
                while True:
                    async with Database(store) as db, db.connect() as conn:
                        step = await outbox.get(conn, doubt.id)
                    assert step is not None
                    if step.status is DeliveryStatus.SENT:
                        break
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise AssertionError(log.read_text()[-3000:]) from None
        finally:
            await stop(second, signal.SIGTERM)
        statuses = crossposts(fake)
        last = [r for r in fake.requests if r.path.endswith("/crosspost")][-1]
    assert len(statuses) == 2  # the first's answer never went out (its status: 200 or none)
    assert statuses[-1] == 400
    assert last.response["code"] == 40033
    assert copies() == [1, 1, 1]
