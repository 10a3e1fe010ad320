"""A basic group that becomes a supergroup keeps its subscription: the whole bot on the fake.

Telegram gives the group a new id: the old one answers every request with a 400 carrying
``migrate_to_chat_id``, and the bot gets the service messages ``migrate_to_chat_id`` (in the old
group) and ``migrate_from_chat_id`` (in the new supergroup). Either way the subscription, its
pending deliveries and the chat's ledger move to the new id, audited, and the next update is
delivered there (a new live scoreboard: the old one stays in the old group)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from bot.domain.subscription import ChannelRef, Mode
from bot.store import subscriptions as sub_rows
from bot.store.schema import audit_log
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.helpers import tally

from .conftest import shown
from .test_app import TELEGRAM, VirtualTime, config, from_bot, running


@pytest.mark.parametrize("told", ["by the service messages", "by the 400 alone"])
async def test_a_migrated_group_keeps_its_subscription(tmp_path: Path, told: str) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        group = fake.add_group("Union hall", supergroup=False)
        cfg = config(tmp_path, fake, admin_chats=[])
        async with running(tmp_path, fake, vt, cfg) as bot:
            old = ChannelRef(TELEGRAM, str(group.id), str(group.id))
            async with bot.app.db.begin() as conn:
                await sub_rows.subscribe(
                    conn, old, "bessemer-2021", Mode.EVENTS, by="t", at=clock.now()
                )
            first = await bot.app.pipeline.ingest(tally(84, 201))
            await bot.settle()
            assert first.message is not None
            assert len(from_bot(fake, group)) == 1

            supergroup = fake.migrate_to_supergroup(group, notify=told == "by the service messages")
            new = ChannelRef(TELEGRAM, str(supergroup.id), str(supergroup.id))
            if told == "by the service messages":
                await fake.wait_for(lambda: not fake.pending_updates)
                await bot.app.idle()
            second = await bot.app.pipeline.ingest(tally(900, 201))  # a lead change
            await bot.settle()
            assert second.message is not None

            async with bot.app.db.connect() as conn:
                assert await sub_rows.for_channel(conn, old) == []
                (sub,) = await sub_rows.for_channel(conn, new)
                entries = (await conn.execute(select(audit_log))).mappings().all()
            assert sub.enabled
            assert sub.live_message_id is None or int(sub.live_message_id) > 0
            (moved,) = [e for e in entries if e["action"] == "move channel"]
            assert (moved["old"], moved["new"]) == (str(old), str(new))
            assert moved["actor"] == "telegram:platform"

    shown_there = [shown(m) for m in from_bot(fake, supergroup)]
    assert len(shown_there) == 1
    assert second.message.headline.split()[0] in shown_there[0]
    assert len(from_bot(fake, group)) == 1  # nothing more in the old group
    refused = [r for r in fake.requests if r.status == 400 and r.method == "sendMessage"]
    assert len(refused) == (0 if told == "by the service messages" else 1)
