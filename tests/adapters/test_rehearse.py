"""``rehearse <count> [keep]`` on Discord, Slack and Telegram, with their real client libraries
against the fakes: a test message in every channel subscribed to the count, paced and posted
the way updates are; a channel where the bot may not post is reported with the platform's
reason; the others' messages are deleted again a minute later (on the bot's clock), unless kept.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select

from adapters.console.adapter import CONSOLE_CHANNEL
from bot.commands.request import Reply, Request
from bot.delivery.rehearsal import KEEP_S, MARK
from bot.domain.subscription import ChannelRef, Mode
from bot.store import subscriptions as sub_rows
from bot.store.schema import audit_log
from tests.adapters import test_discord as discord_tests
from tests.adapters.contract import COUNT, RIGS, subscribe, words
from tests.adapters.rigs import Rig
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["discord", "slack", "telegram"])
def rig(request: pytest.FixtureRequest) -> Rig:
    return RIGS[request.param]()


class HeldSleep:
    """The rehearsal's sleep, held until released: the test looks at the channels within the
    minute; released, it moves the bot's clock on by what was asked."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.asked: list[float] = []
        self.gate = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.gate.wait()
        self.rig.advance(seconds)


def rehearsals_shown(rig: Rig, channel: ChannelRef) -> int:
    return sum(words(MARK) in words(s.text) for s in rig.seen(channel))


async def rehearse(rig: Rig, text: str) -> Reply:
    where = rig.channels[0]
    request = Request(where, "admin-1", "Ada", text, admin=True)
    return await rig.app.commands.handle(request)


async def test_rehearsal_reports_the_channel_it_cannot_post_in_and_deletes_the_rest(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        good, denied = rig.channels
        await subscribe(rig, good, denied)
        rig.deny_posting(denied)
        held = HeldSleep(rig)
        rig.app.rehearsals.sleep = held
        reply = await rehearse(rig, f"rehearse {COUNT}")
        within_the_minute = (rehearsals_shown(rig, good), rehearsals_shown(rig, denied))
        posted = rig.seen(good)
        started = rig.clock.monotonic()
        held.gate.set()
        await rig.app.rehearsals.settled()
        after = rehearsals_shown(rig, good)
        waited = rig.clock.monotonic() - started
        async with rig.app.db.connect() as conn:
            audited = (await conn.execute(select(audit_log))).mappings().all()
    assert not reply.ok
    assert "posted to 1 of 2 channels" in reply.text, reply.text
    assert str(denied) in reply.text, reply.text
    assert str(good) not in reply.text, reply.text
    assert within_the_minute == (1, 0)
    assert "RWDSU" not in posted[0].text  # no choice, no figure that could pass for a result
    assert held.asked == [KEEP_S]
    assert waited >= KEEP_S - 1e-6
    assert after == 0
    assert [(a["action"], a["allowed"]) for a in audited] == [("rehearse", True)]
    assert str(denied) in audited[0]["detail"]


async def test_a_kept_rehearsal_stays(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        channels = rig.channels
        await subscribe(rig, *channels)
        held = HeldSleep(rig)
        rig.app.rehearsals.sleep = held
        reply = await rehearse(rig, f"rehearse {COUNT} keep")
        await rig.app.rehearsals.settled()
    assert reply.ok, reply.text
    assert "posted to 2 of 2 channels (kept); none failed" in reply.text
    assert held.asked == []
    assert [rehearsals_shown(rig, c) for c in channels] == [1, 1]


async def test_on_the_console_it_is_printed_and_then_said_withdrawn(tmp_path: Path) -> None:
    rig = RIGS["console"]()
    async with rig.run(tmp_path):
        await subscribe(rig, CONSOLE_CHANNEL)
        reply = await rig.app.commands.handle(
            Request(CONSOLE_CHANNEL, "local", "local", f"rehearse {COUNT}", admin=True)
        )
        await rig.app.rehearsals.settled()
    shown = [s.text for s in rig.seen(CONSOLE_CHANNEL)]
    assert "posted to 1 of 1 channels (deleted again in 60 s, best-effort)" in reply.text
    assert sum(MARK in text for text in shown) >= 1
    assert any("withdrawn" in text for text in shown), shown


async def test_discord_slash_rehearse_keep_is_answered_to_the_admin_alone(
    tmp_path: Path, world: discord_tests.World
) -> None:
    cfg = discord_tests.config(tmp_path, world)
    async with discord_tests.running(world, cfg) as bot:
        refs = [world.ref(world.results), world.ref(world.union)]
        async with bot.app.db.begin() as conn:
            for ref in refs:
                at = bot.app.clock.now()
                await sub_rows.subscribe(conn, ref, COUNT, Mode.EVENTS, by="test", at=at)
        world.fake.revoke_send(world.union)
        options = discord_tests.opts(count=COUNT, after="keep")
        asked = await bot.slash(discord_tests.DAVE, "rehearse", options, channel=world.admin)
        kept = discord_tests.bot_posts(world.fake, world.results)
    answer = discord_tests.answer(asked)
    assert answer.ephemeral
    assert (
        "Rehearsal of bessemer-2021 posted to 1 of 2 channels (kept); 1 failed:" in answer.content
    )
    assert "#union" in answer.content
    assert [MARK in m.embeds[0]["title"] for m in kept] == [True]
