"""Private replies on Telegram, which has no ephemeral messages (``adapters.telegram.private``),
with the whole bot and the core's real command limits: a flood of commands from many members,
some who started the bot and some who did not, never shows a group more than one message per
window; private answers go to the members' private chats. ``/start`` is answered; a person
creates a count in their own private chat; an admin of an unlisted group is told why they may
not change the operator's count."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram

from .conftest import shown
from .test_app import Running, VirtualTime, config, from_bot, running


async def handled(bot: Running) -> None:
    """Every update so far has been answered (the tasks answering them have ended)."""
    await bot.fake.wait_for(lambda: not bot.fake.pending_updates)
    tasks = bot.adapter.lifecycle._handlers._tasks
    if tasks:
        await asyncio.wait(set(tasks))


async def test_a_flood_of_commands_never_floods_the_group(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        group = fake.add_group("Union hall")
        members = [fake.add_user(f"Member {i}") for i in range(20)]
        for member in members:
            fake.add_member(group, member)
        started = {m.id: fake.private_chat(m) for m in members[:10]}
        cfg = config(tmp_path, fake, admin_chats=[])
        async with running(tmp_path, fake, vt, cfg) as bot:
            for _ in range(3):
                for member in members:
                    fake.command(group, member, "/count status bessemer-2021")
            await handled(bot)
            in_group = from_bot(fake, group)
            assert len(in_group) == 1, [shown(m) for m in in_group]  # the rest is private
            assert "Bessemer" in shown(in_group[0])
            dms = {m: len(from_bot(fake, chat)) for m, chat in started.items()}
            assert sum(dms.values()) >= 29
            assert all(n >= 2 for n in dms.values())

            clock.advance(5)  # the next window: one member who never started the bot asks
            for _ in range(30):
                fake.command(group, members[15], "/count help")
            await handled(bot)
            notices = from_bot(fake, group)[1:]
            assert [shown(m) for m in notices] == [
                "I answer that privately: open https://t.me/tallybot and press Start, then "
                "ask again."
            ]


async def test_start_is_answered_and_a_private_chat_is_its_members_own(tmp_path: Path) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        ada = fake.add_user("Ada", "ada")
        dm = fake.private_chat(ada)
        owner = fake.add_user("Owner")
        group = fake.add_group("Elsewhere", owner=owner)
        fake.private_chat(owner)
        cfg = config(tmp_path, fake, admin_chats=[])
        async with running(tmp_path, fake, vt, cfg) as bot:
            fake.command(dm, ada, "/start")
            await handled(bot)
            (welcome,) = from_bot(fake, dm)
            assert "/count help" in shown(welcome)

            fake.command(dm, ada, '/count create ada-vote "Ada\'s vote" choices=yes,no')
            await handled(bot)
            assert "Created" in shown(from_bot(fake, dm)[-1]) or "ada-vote" in shown(
                from_bot(fake, dm)[-1]
            )
            assert not shown(from_bot(fake, dm)[-1]).startswith("Error")

            fake.command(group, owner, "/count update bessemer-2021 yes=1 no=2")
            await handled(bot)
            refusal = shown(from_bot(fake, fake.private_chat(owner))[-1])
            assert "ask an admin of this chat" not in refusal
            assert "admin_chats" in refusal
