"""Exactly once through a real kill -9: ``tallybot run`` (a subprocess, the plug-in found
through its entry point) posts an update to a JSON, a Mattermost-style and a Teams-style
receiver; each carries the post out and holds its answer; the bot is killed with SIGKILL, started
again on the same store, and sends each again with the same ``Idempotency-Key``: each receiver
shows the update once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from bot.base.clock import SystemClock
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryStatus
from bot.store.schema import outbox as outbox_table
from tests.delivery.crash_run import start_bot, stop, toml_value
from tests.fakes.webhook_fake import FakeReceivers
from tests.helpers import bessemer, tally

pytestmark = pytest.mark.slow  # real processes

TARGETS = {
    "newsroom": ("json", "json"),
    "mattermost": ("hooks", "slack"),
    "teams": ("workflows", "teams"),
}


def config(path: Path, store: str) -> None:
    lines = [f"[store]\nurl = {toml_value(store)}", "[webhook]", "allow_private_addresses = true"]
    for name, (_, fmt) in TARGETS.items():
        lines += ["[[webhook.targets]]", f'name = "{name}"', f'format = "{fmt}"']
    lines += [
        "[[counts]]",
        'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'tie_holder = "no"\nreceived = 3215',
        'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
        'source = {kind = "manual"}',
    ]
    path.write_text("\n".join(lines) + "\n")


async def sent(store: str) -> list[DeliveryStatus]:
    from sqlalchemy import select

    async with Database(store) as db, db.connect() as conn:
        ids = (await conn.scalars(select(outbox_table.c.id))).all()
        return [d.status for i in ids if (d := await outbox.get(conn, i)) is not None]


@pytest.mark.timeout(60)
async def test_a_kill_9_with_every_answer_held_leaves_one_copy_at_each_receiver(
    tmp_path: Path,
) -> None:
    store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    config(tmp_path / "tallybot.toml", store)
    clock = SystemClock()
    async with Database(store) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, bessemer())
            for name in TARGETS:
                ref = ChannelRef(Platform("webhook"), "operator", name)
                await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", Mode.EVENTS, by="t", at=clock.now()
                )
        result = await Pipeline(db, clock).ingest(tally(84, 201))
        assert result.message is not None
    async with FakeReceivers(now=time.time) as fake:
        env = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper()}
        for name, (kind, _) in TARGETS.items():
            up = name.upper()
            env[f"TALLYBOT_WEBHOOK_{up}_URL"] = fake.url(kind, name)
            if kind == "json":
                env[f"TALLYBOT_WEBHOOK_{up}_SECRET"] = "a-secret-of-the-newsroom"
                fake.add_secret(name, "a-secret-of-the-newsroom")
        release = [fake.answers_held.hang(name) for name in TARGETS]
        log = tmp_path / "bot.log"
        bot = await start_bot(tmp_path / "tallybot.toml", env, log)
        try:
            await fake.wait_for(lambda: len(fake.r.requests) == len(TARGETS), timeout=40)
            await stop(bot, signal.SIGKILL)  # every post carried out, no answer back
            for event in release:
                event.set()
            bot = await start_bot(tmp_path / "tallybot.toml", env, log)
            await fake.wait_for(lambda: len(fake.r.requests) == 2 * len(TARGETS), timeout=40)
            for _ in range(100):
                if await sent(store) == [DeliveryStatus.SENT] * len(TARGETS):
                    break
                await asyncio.sleep(0.1)
        finally:
            await stop(bot, signal.SIGTERM)
    assert await sent(store) == [DeliveryStatus.SENT] * len(TARGETS), log.read_text()[-3000:]
    for name in TARGETS:
        (shown,) = fake.seen(name)
        keys = [k for _, t, k in fake.r.requests if t == name]
        assert keys == [shown.key, shown.key]  # sent twice, with one key; shown once
    assert sys.executable  # the subprocess ran this interpreter, the plug-in installed in it
