"""``/count`` on Telegram: updates from the fake through the real aiogram Bot into the core's
Request, admin status from getChatMember within the listed chats only, and replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from adapters.telegram.private import PrivateReplies
from adapters.telegram.render import WORD_JOINER
from adapters.telegram.settings import TelegramSettings
from bot.commands.request import FAILED, Reply, Request
from bot.commands.throttle import Throttle
from bot.domain.message import Attachment
from bot.domain.subscription import Platform
from bot.platform import Asker
from bot.testing.clock import FakeClock
from tests.adapters.telegram.conftest import live_entities, shown
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import png
from tests.hostile import HOSTILE, typed

if TYPE_CHECKING:
    from aiogram import Bot

    from adapters.telegram.commands import TelegramCommands
    from adapters.telegram.once import MemoryLedger

PLATFORM = Platform("telegram")


@pytest.fixture
async def fake(clock: FakeClock) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(clock=clock.monotonic, privacy_mode=False) as f:
        yield f


async def test_commands_from_groups_private_chats_and_channels(
    fake: FakeTelegram, bot: Bot
) -> None:
    from adapters.telegram.commands import incoming

    alice = fake.add_user("Alice", "alice")
    group, news = fake.add_group("Union hall"), fake.add_channel("Count news")
    fake.add_member(group, alice)
    fake.command(group, alice, "/count status bessemer-2021")
    fake.command(group, alice, "/count@TallyBot  subscribe bessemer-2021 live ")
    fake.command(group, alice, "/count@otherbot status")  # for another bot
    fake.user_says(group, alice, "what's the /count now?")  # not a command at the start
    fake.command(group, alice, "/counter status")
    fake.command(group, alice, "/count final bessemer-2021", anonymous=True)
    fake.command(fake.private_chat(alice), alice, "/count")
    fake.channel_post(news, "/count status")
    got = [incoming(u, "tallybot") for u in await bot.get_updates()]
    assert [(g.text, g.chat_type, g.as_chat) if g else None for g in got] == [
        ("status bessemer-2021", "supergroup", False),
        ("subscribe bessemer-2021 live", "supergroup", False),
        None,
        None,
        None,
        ("final bessemer-2021", "supergroup", True),
        ("", "private", False),
        ("status", "channel", True),
    ]
    first, anonymous, post = got[0], got[5], got[7]
    assert first is not None
    assert (first.user_id, first.user_name, first.chat_id) == (alice.id, "alice", group.id)
    assert anonymous is not None
    assert anonymous.user_id is None
    assert post is not None
    assert (post.user_id, post.user_name) == (None, "Count news")


class Core:
    """Stands in for bot.commands.handler.Commands: records requests and answers ``reply``."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> Reply:
        self.requests.append(request)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def commands(
    bot: Bot, clock: FakeClock, core: Core, settings: TelegramSettings, ledger: MemoryLedger
) -> TelegramCommands:
    from adapters.telegram.commands import AdminCheck, TelegramCommands

    admins = AdminCheck(bot, ttl=settings.admin_cache_seconds, monotonic=clock.monotonic)
    private = PrivateReplies(
        Throttle(clock), clock.monotonic, platform=PLATFORM, bot_username="tallybot"
    )
    return TelegramCommands(
        bot, core, settings, ledger, platform=PLATFORM, bot_username="tallybot", admins=admins,
        private=private,
    )  # fmt: skip


async def handle_all(bot: Bot, tc: TelegramCommands) -> None:
    updates = await bot.get_updates()
    for update in updates:
        await tc.handle_update(update)
    if updates:
        await bot.get_updates(offset=updates[-1].update_id + 1)


async def test_admin_status_from_get_chat_member_in_listed_chats_only(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from adapters.telegram.commands import admin_policy
    from adapters.telegram.once import MemoryLedger

    alice, bob, carol = fake.add_user("Alice"), fake.add_user("Bob"), fake.add_user("Carol")
    hall, other = fake.add_group("Union hall"), fake.add_group("Elsewhere", owner=carol)
    fake.add_member(hall, alice, "administrator")
    fake.add_member(hall, bob)
    fake.add_member(other, alice)
    fake.add_member(other, bob)
    settings = TelegramSettings(admin_chats=frozenset({hall.id}), admin_users=frozenset({bob.id}))
    core = Core(Reply("ok"))
    tc = commands(bot, clock, core, settings, MemoryLedger())
    fake.command(hall, alice, "/count final bessemer-2021")
    fake.command(hall, alice, "/count pause bessemer-2021")  # cached: no second getChatMember
    fake.command(hall, alice, "/count status bessemer-2021")  # not an admin command: no call
    fake.command(other, carol, "/count final bessemer-2021")  # creator, but not a listed chat
    fake.command(other, bob, "/count final bessemer-2021")  # a listed admin user: anywhere
    await handle_all(bot, tc)
    policy = admin_policy(settings)
    assert [r.admin for r in core.requests] == [True, True, False, False, True]
    # Chat admins administer their own chat's counts, wherever it is.
    assert [r.tenant_admin for r in core.requests] == [True, True, False, True, False]
    assert len(fake.calls_to("getChatMember")) == 3  # alice once (cached), carol, bob
    clock.advance(settings.admin_cache_seconds + 1)
    fake.add_member(hall, alice, "member")  # demoted: seen once the cache runs out
    fake.fail_next("getChatMember", status=500)  # and Telegram failing fails closed
    fake.command(hall, alice, "/count final bessemer-2021")
    fake.command(hall, alice, "/count final bessemer-2021")
    await handle_all(bot, tc)
    assert [r.admin for r in core.requests[-2:]] == [False, False]
    assert policy.verdict(Asker("1", core.requests[0].channel.workspace)).admin is False


async def test_replies_errors_and_charts(fake: FakeTelegram, bot: Bot, clock: FakeClock) -> None:
    from adapters.telegram.once import MemoryLedger

    alice = fake.add_user("Alice")
    group = fake.private_chat(alice)  # where every reply shows (private.py: not in groups)
    ledger = MemoryLedger()
    core = Core(Reply("Error: unknown count 'x'", ok=False))
    tc = commands(bot, clock, core, TelegramSettings(), ledger)
    asked = fake.command(group, alice, "/count status x").message
    await handle_all(bot, tc)
    core.reply = Reply(
        "Chart of X.", ephemeral=False, attachment=Attachment("c.png", png(6, 4), "c")
    )
    fake.command(group, alice, "/count chart x")
    await handle_all(bot, tc)
    core.reply = RuntimeError("a bug in the core")  # type: ignore[assignment]
    fake.command(group, alice, "/count status")
    await handle_all(bot, tc)
    ours = [m for m in fake.visible(group) if m.source != "user"]
    assert [shown(m) for m in ours] == [
        "Error: unknown count 'x'",
        "Chart of X.",
        FAILED.text,  # the one catch-all answer of every platform
    ]
    sent = fake.calls_to("sendMessage")
    assert sent[0].args["reply_parameters"]["message_id"] == asked.message_id
    assert ours[1].photo is not None
    assert (await ledger.known(group.id, "tb1")).others == {m.message_id for m in ours}


@pytest.mark.parametrize("text", HOSTILE[:8])
async def test_a_hostile_reply_shows_as_typed(
    fake: FakeTelegram, bot: Bot, clock: FakeClock, text: str
) -> None:
    from adapters.telegram.once import MemoryLedger

    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    tc = commands(bot, clock, Core(Reply(text)), TelegramSettings(), MemoryLedger())
    fake.command(dm, alice, "/count status")
    await handle_all(bot, tc)
    reply = fake.visible(dm)[-1]
    assert live_entities(reply) == []
    assert shown(reply) == typed(text).replace(WORD_JOINER, "")
