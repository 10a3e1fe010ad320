"""Following a count on Telegram, with the whole bot, the real aiogram client and the fake:
``follow`` from a group answers in the member's private chat, and the clinch and the final come
there by direct message (the group sees none of it); a member who never started the bot is
told how (the bot's link); ``following`` and ``unfollow``; a DM whose answer was lost is in the
private chat once; a member who blocked the bot is unfollowed once; 100 members following at
once are all answered and all get the final."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.domain.model import TallyState
from bot.store import audit as audit_rows
from bot.store import follows as follow_rows
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.world import Chat, User
from tests.helpers import tally

from .conftest import shown
from .test_app import VirtualTime, config, from_bot, running
from .test_private import handled

RECEIVED = 738 + 1798 + 505
CLINCH = tally(738, 1608, received=RECEIVED)  # No has a majority of the ballots received
FINAL = tally(738, 1798, challenged=505, received=RECEIVED, state=TallyState.FINAL)


def union_hall(fake: FakeTelegram) -> tuple[User, User, Chat]:
    """Ada and Bo, members of the group "Union hall" (neither has a private chat yet)."""
    ada, bo = fake.add_user("Ada", "ada"), fake.add_user("Bo", "bo")
    group = fake.add_group("Union hall")
    fake.add_member(group, ada)
    fake.add_member(group, bo)
    return ada, bo, group


async def test_follow_in_a_group_sends_the_calls_to_the_private_chat(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        ada, bo, group = union_hall(fake)
        ada_dm = fake.private_chat(ada)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            fake.command(group, ada, "/count follow bessemer-2021")
            fake.command(group, bo, "/count follow bessemer-2021")  # never started the bot
            await handled(bot)
            (answer,) = from_bot(fake, ada_dm)
            assert shown(answer) == (
                "You follow bessemer-2021: calls (a side clinching, a call withdrawn, the "
                "final), by direct message. (unfollow bessemer-2021 stops it.)"
            )
            (told,) = from_bot(fake, group)  # Bo is told how, in the group's one notice
            assert "https://t.me/tallybot" in shown(told)
            assert "Ada" not in shown(told)
            assert "follow" not in shown(told)
            async with bot.app.db.connect() as conn:
                assert [f.user_id for f in await follow_rows.for_count(conn, "bessemer-2021")] == [
                    str(ada.id)
                ]

            await bot.app.pipeline.ingest(tally(463, 1100, received=RECEIVED))
            await bot.app.pipeline.ingest(CLINCH)
            await bot.app.pipeline.ingest(FINAL)
            await bot.settle()
            dms = [shown(m) for m in from_bot(fake, ada_dm)[1:]]
            assert len(dms) == 2
            assert "No union has clinched a majority (unofficial)" in dms[0]
            assert "Final tally: No union wins, 1,798 to 738" in dms[1]
            assert len(from_bot(fake, group)) == 1  # the group got nothing of it

            fake.command(ada_dm, ada, "/count following")
            await handled(bot)
            assert shown(from_bot(fake, ada_dm)[-1]) == (
                "You follow, by direct message:\n  bessemer-2021: calls (a side clinching, a "
                "call withdrawn, the final) (calls)"
            )
            fake.command(group, ada, "/count unfollow bessemer-2021")
            await handled(bot)
            assert shown(from_bot(fake, ada_dm)[-1]) == "You no longer follow bessemer-2021."


async def test_a_dm_whose_answer_was_lost_is_there_once(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        ada = fake.add_user("Ada", "ada")
        ada_dm = fake.private_chat(ada)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            fake.command(ada_dm, ada, "/count follow bessemer-2021 final")
            await handled(bot)
            assert len(from_bot(fake, ada_dm)) == 1
            fake.lose_answer("sendPhoto", chat=ada_dm.id)  # the final (with its chart) goes out
            fake.lose_answer("sendMessage", chat=ada_dm.id)
            await bot.app.pipeline.ingest(FINAL)
            await bot.settle()
            finals = [m for m in from_bot(fake, ada_dm) if "Final tally" in shown(m)]
            assert len(finals) == 1, [shown(m) for m in from_bot(fake, ada_dm)]
            assert len(await bot.sent()) == 1


async def test_a_member_who_blocked_the_bot_is_unfollowed_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        ada = fake.add_user("Ada", "ada")
        ada_dm = fake.private_chat(ada)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            fake.command(ada_dm, ada, "/count follow bessemer-2021 events")
            await handled(bot)
            fake.block_bot(ada)
            with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
                await bot.app.pipeline.ingest(tally(463, 1100, received=RECEIVED))
                await bot.app.pipeline.ingest(CLINCH)
                await bot.settle()
                await bot.app.pipeline.ingest(FINAL)
                await bot.settle()
            lines = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
            assert len(lines) == 1
            assert lines[0].startswith(f"unfollowed telegram:{ada.id}: ")
            assert "bot was blocked by the user" in lines[0]
            sends = [c for c in fake.calls_to("sendMessage") if str(ada_dm.id) in str(c)]
            assert len(sends) == 2  # the follow's answer, and the one DM refused
            async with bot.app.db.connect() as conn:
                assert await follow_rows.for_count(conn, "bessemer-2021") == []
                entries = await audit_rows.recent(conn, limit=20)
            assert [e.action for e in entries].count("unfollow") == 1


async def test_a_hundred_members_follow_at_once(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        group = fake.add_group("Union hall")
        members = [fake.add_user(f"Member {i}") for i in range(100)]
        chats = {}
        for member in members:
            fake.add_member(group, member)
            chats[member.id] = fake.private_chat(member)
        async with running(tmp_path, fake, vt, config(tmp_path, fake, admin_chats=[])) as bot:
            for member in members:
                fake.command(group, member, "/count follow bessemer-2021 final")
            await handled(bot)
            answered = [m for m in members if len(from_bot(fake, chats[m.id])) == 1]
            assert len(answered) == 100
            await bot.app.pipeline.ingest(FINAL)
            await bot.settle()
            got = [m for m in members if len(from_bot(fake, chats[m.id])) == 2]
            assert len(got) == 100
            assert len(await bot.sent()) == 100
            assert from_bot(fake, group) == []
            assert fake.rate_limited == []  # no 429: the probes and DMs paced under the limits
