"""Telegram: the real aiogram Bot long-polling FakeTelegram, two groups."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.testing.clock import FakeClock
from tests.adapters.rigs.base import Hold, Rig, Seen, count_table
from tests.adapters.telegram import test_app as telegram_tests
from tests.adapters.telegram.conftest import shown
from tests.fakes.telegram_fake import Chat, FakeTelegram, User
from tests.fakes.telegram_fake.testing import aiogram_bot

PINGS = ("mention", "text_mention")
"""Entities that notify someone (an @username, a user named by id)."""


class HeldTime(telegram_tests.VirtualTime):
    """The test module's virtual time, its sleeps through a :class:`Hold`."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.hold = Hold(clock.monotonic, clock.advance)

    async def sleep(self, seconds: float) -> None:
        await self.hold.sleep(seconds)


class TelegramRig(Rig):
    name = "telegram"
    platform: ClassVar[Platform] = Platform("telegram")

    def __init__(self) -> None:
        super().__init__()
        self._clock = FakeClock()
        self.vt = HeldTime(self._clock)
        self._fake: FakeTelegram | None = None
        self._groups: list[Chat] = []
        self._members: list[User] = []
        self._private: dict[int, Chat] = {}
        self._started: tuple[Path, Any] = (Path(), None)

    @property
    def fake(self) -> FakeTelegram:
        assert self._fake is not None
        return self._fake

    @property
    def clock(self) -> FakeClock:
        return self._clock

    @property
    def hold(self) -> Hold:
        return self.vt.hold

    @property
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        a, b = (ChannelRef(self.platform, str(g.id), str(g.id)) for g in self._groups)
        return a, b

    def chat(self, channel: ChannelRef) -> Chat:
        (chat,) = [g for g in self._groups if str(g.id) == channel.channel]
        return chat

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        async with FakeTelegram(clock=self._clock.monotonic) as fake:
            self._fake = fake
            self._groups = [fake.add_group("Results"), fake.add_group("Union hall")]
            self._members = [fake.add_user(f"Member {i}", f"member{i}") for i in range(100)]
            for group in self._groups:
                for member in self._members:
                    fake.add_member(group, member)
            # every member has pressed Start: a private answer goes to their own chat
            self._private = {m.id: fake.private_chat(m) for m in self._members}
            cfg = parse(
                {
                    "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
                    "telegram": {"api_base": fake.base_url},
                    "counts": [count_table(title)],
                },
                tmp_path / "tallybot.toml",
            )
            self._started = (tmp_path, cfg)
            async with self.bots() as app:
                yield app

    @asynccontextmanager
    async def bot(self) -> AsyncIterator[App]:
        tmp_path, cfg = self._started
        async with telegram_tests.running(tmp_path, self.fake, self.vt, cfg) as bot:
            yield bot.app

    def seen(self, channel: ChannelRef) -> list[Seen]:
        found = []
        for m in telegram_tests.from_bot(self.fake, self.chat(channel)):
            entities = [*m.entities, *m.caption_entities]
            pings = tuple(f"{e['type']} {e['offset']}" for e in entities if e["type"] in PINGS)
            quiet = m.disable_notification
            found.append(Seen(str(m.message_id), shown(m), int(m.photo is not None), pings, quiet))
        return found

    def lose_next_answer(self, *, chart: bool = False, channel: ChannelRef | None = None) -> None:
        chat = None if channel is None else self.chat(channel).id
        self.fake.lose_answer("sendPhoto" if chart else "sendMessage", chat=chat)

    def limit_next_post(self, channel: ChannelRef, retry_after: int) -> None:
        chat = self.chat(channel).id
        self.fake.fail_next("sendMessage", status=429, retry_after=retry_after, chat=chat)

    def hang(self, channel: ChannelRef) -> asyncio.Event:
        return self.fake.hangs.hang(channel.channel)

    async def wait_until(self, check: Callable[[], bool]) -> None:
        await self.fake.wait_for(check, timeout=10)

    def fail_next_post(self, times: int = 1) -> None:
        # A 429: Telegram surely posted nothing (after a 5xx it may have: the adapter repairs
        # that itself, see test_a_post_whose_answer_was_lost_is_shown_once).
        self.fake.fail_next("sendMessage", status=429, retry_after=5, times=times)

    async def remove(self, channel: ChannelRef) -> None:
        self.fake.set_bot_status(self.chat(channel), "kicked")

    def deny_posting(self, channel: ChannelRef) -> None:
        self.fake.set_bot_status(self.chat(channel), "restricted")

    async def delete(self, channel: ChannelRef, message_id: str) -> None:
        async with aiogram_bot(self.fake) as moderator:
            assert await moderator.delete_message(int(channel.channel), int(message_id))

    async def command(self, channel: ChannelRef, member: int, text: str) -> Any:
        return self.fake.command(self.chat(channel), self._members[member], f"/count {text}")

    def answered(self, asked: list[Any]) -> int:
        """Telegram's answers name no command: per chat, the bot's messages since the first
        command asked there, at most one per command; and a private answer, in the asker's
        own chat with the bot (``adapters.telegram.private``), one per command at most."""
        found = 0
        for user_id in {i.message.sender_id for i in asked}:
            mine = [i for i in asked if i.message.sender_id == user_id]
            private = telegram_tests.from_bot(self.fake, self._private[user_id])
            found += min(len(mine), len(private))
        for chat_id in {i.message.chat_id for i in asked}:
            mine = [i.message.message_id for i in asked if i.message.chat_id == chat_id]
            (chat,) = [g for g in self._groups if g.id == chat_id]
            since = [
                m for m in telegram_tests.from_bot(self.fake, chat) if m.message_id > min(mine)
            ]
            found += min(len(mine), len(since))
        return found

    async def wait(self, check: Callable[[], bool], timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(check, timeout=timeout)

    def limit_next_reply(self, retry_after: int) -> int:
        self.fake.fail_next("sendMessage", status=429, retry_after=retry_after)
        return retry_after

    async def take_down(self) -> str | None:
        self.fake.fail_next("getUpdates", status=502, times=10_000)
        self.advance(60)  # the long poll under way ends, the next ones fail
        failed = lambda: any(r.status == 502 for r in self.fake.calls_to("getUpdates"))  # noqa: E731
        await self.fake.wait_for(failed, timeout=10)
        self.advance(3600)  # no answer for an hour: past any poll timeout
        return "telegram: no answer to getUpdates for"
