"""Who may ``rehearse`` and where: the operator's admins rehearse every subscription of the
operator's counts; a place's admins rehearse their own count only in their own place (its
subscriptions elsewhere are not theirs to post in); anyone else is refused, and audited. The
messages go through the app's adapter (here the recording one), and are deleted again after
the minute, on the app's sleep."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.commands.request import Reply, Request
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.runtime.app import App
from bot.store import audit as audit_rows
from bot.store import subscriptions as sub_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.runtime.test_count_verbs import MAKE, config

pytestmark = pytest.mark.timeout(30)

DISCORD = Platform("discord")
HALL = ChannelRef(DISCORD, "81384788765712384", "1001")
ANNEX = ChannelRef(DISCORD, "81384788765712384", "1002")
ELSEWHERE = ChannelRef(DISCORD, "99999999999999999", "2002")


class Rig:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.slept: list[float] = []
        self.adapter = RecordingAdapter(DISCORD)
        self.app = App(
            config(tmp_path),
            {DISCORD: lambda commands: self.adapter},
            clock=self.clock,
            sleep=self.sleep,
            poll=False,
        )

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.clock.advance(seconds)

    async def ask(self, text: str, where: ChannelRef = HALL, **who: bool) -> Reply:
        self.clock.advance(3)  # within the command limits
        request = Request(where, "42", "Ada", text, **who)
        return await self.app.commands.handle(request)

    async def subscribe(self, count: str, *channels: ChannelRef) -> None:
        async with self.app.db.begin() as conn:
            for c in channels:
                await sub_rows.subscribe(
                    conn, c, count, Mode.EVENTS, by="test", at=self.clock.now()
                )

    def posted_to(self) -> list[ChannelRef]:
        return [p.channel for p in self.adapter.posted]


async def test_the_operators_admins_rehearse_everywhere_and_it_is_deleted_after_a_minute(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    async with rig.app:
        await rig.subscribe("bessemer-2021", HALL, ANNEX, ELSEWHERE)
        reply = await rig.ask("rehearse bessemer-2021", admin=True)
        await rig.app.rehearsals.settled()
    assert reply.ok, reply.text
    assert "posted to 3 of 3 channels" in reply.text
    assert sorted(map(str, rig.posted_to())) == sorted(map(str, (HALL, ANNEX, ELSEWHERE)))
    assert rig.slept.count(60.0) == 1
    assert rig.adapter.deleted_messages == {p.message_id for p in rig.adapter.posted}


async def test_a_place_admin_rehearses_only_in_their_own_place(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    async with rig.app:
        made = await rig.ask(MAKE + " public=yes", tenant_admin=True)
        assert made.ok, made.text
        await rig.subscribe("local-7", HALL, ANNEX, ELSEWHERE)
        reply = await rig.ask("rehearse local-7 keep", tenant_admin=True)
        await rig.app.rehearsals.settled()
    assert reply.ok, reply.text
    assert "posted to 2 of 2 channels (kept)" in reply.text
    assert "Only this" in reply.text
    assert ELSEWHERE not in rig.posted_to()
    assert rig.adapter.deleted_messages == set()


async def test_others_are_refused_and_audited(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    async with rig.app:
        await rig.subscribe("bessemer-2021", HALL)
        refused = await rig.ask("rehearse bessemer-2021", tenant_admin=True)  # not the operator's
        member = await rig.ask("rehearse bessemer-2021")
        async with rig.app.db.connect() as conn:
            entries = await audit_rows.recent(conn, limit=10)
    assert not refused.ok
    assert not member.ok
    assert rig.posted_to() == []
    assert [(e.action, e.allowed) for e in entries] == [("rehearse", False)] * 2
