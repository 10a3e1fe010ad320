"""Slack: the real slack_bolt / slack_sdk against FakeSlack in Socket Mode, two channels."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.testing.clock import FakeClock
from tests.adapters import test_slack as slack_tests
from tests.adapters.rigs.base import Hold, Rig, Seen
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.markup import text_objects, visible

PING = re.compile(r"<(!channel|!here|!everyone|!subteam\^\w+|@[UW]\w+)[|>]")
"""What notifies someone in mrkdwn (Slack's mentions of a channel, a group or a user)."""


class HeldTime(slack_tests.VirtualTime):
    """The test module's virtual time, its sleeps through a :class:`Hold`."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = Hold(self.clock.monotonic, self.clock.advance)

    async def sleep(self, seconds: float) -> None:
        await self.hold.sleep(seconds)


class SlackRig(Rig):
    name = "slack"
    platform: ClassVar[Platform] = Platform("slack")

    def __init__(self) -> None:
        super().__init__()
        self.vt = HeldTime()
        self._fake: FakeSlack | None = None
        self._channels: tuple[str, str] = ("", "")
        self._members: list[str] = []
        self._cfg: Any = None

    @property
    def fake(self) -> FakeSlack:
        assert self._fake is not None
        return self._fake

    @property
    def clock(self) -> FakeClock:
        return self.vt.clock

    @property
    def hold(self) -> Hold:
        return self.vt.hold

    @property
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        a, b = (ChannelRef(self.platform, self.fake.team_id, c) for c in self._channels)
        return a, b

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        async with FakeSlack(clock=self.vt.monotonic) as fake:
            self._fake = fake
            self._channels = (fake.add_channel("results"), fake.add_channel("union"))
            self._members = [fake.add_user(f"member{i}") for i in range(100)]
            self._cfg = slack_tests.config(tmp_path, fake, title=title)
            async with self.bots() as app:
                yield app

    @asynccontextmanager
    async def bot(self) -> AsyncIterator[App]:
        async with slack_tests.running(self.fake, self._cfg, self.vt) as bot:
            yield bot.app

    def seen(self, channel: ChannelRef) -> list[Seen]:
        found = []
        for m in slack_tests.bot_posts(self.fake, channel.channel):
            if m.deleted:
                continue
            objects = text_objects(m.blocks)
            # With blocks, members see the blocks; the text is the notification's.
            shown = "\n".join(visible(o) for o in objects) if m.blocks else visible(m.text)
            mrkdwn = [m.text, *(o["text"] for o in objects if o["type"] == "mrkdwn")]
            pings = tuple(p for text in mrkdwn for p in PING.findall(text))
            charts = [
                u for u in self.fake.uploads if u.channel == channel.channel and u.thread_ts == m.ts
            ]
            found.append(Seen(m.ts, shown, len(charts), pings))
        return found

    def lose_next_answer(self, *, chart: bool = False, channel: ChannelRef | None = None) -> None:
        method = "files.completeUploadExternal" if chart else "chat.postMessage"
        where = None if channel is None else channel.channel
        self.fake.fail_next(method, drop=True, commit=True, channel=where)

    def limit_next_post(self, channel: ChannelRef, retry_after: int) -> None:
        self.fake.fail_next(
            "chat.postMessage", status=429, channel=channel.channel, retry_after=retry_after
        )

    def hang(self, channel: ChannelRef) -> asyncio.Event:
        return self.fake.hangs.hang(channel.channel)

    async def wait_until(self, check: Callable[[], bool]) -> None:
        await self.fake.wait_for(check, timeout=10)

    def fail_next_post(self, times: int = 1) -> None:
        self.fake.fail_next("chat.postMessage", status=503, times=times)

    async def remove(self, channel: ChannelRef) -> None:
        self.fake.kick_bot(channel.channel)

    def deny_posting(self, channel: ChannelRef) -> None:
        self.fake.kick_bot(channel.channel)  # on Slack, posting is being in the channel

    async def delete(self, channel: ChannelRef, message_id: str) -> None:
        client = AsyncWebClient(token=self.fake.bot_token, base_url=self.fake.api_url)
        await client.chat_delete(channel=channel.channel, ts=message_id)

    async def command(self, channel: ChannelRef, member: int, text: str) -> Any:
        return await self.fake.send_slash_command(
            command="/count", text=text, user_id=self._members[member], channel_id=channel.channel
        )

    def answered(self, asked: list[Any]) -> int:
        shown = {p.url for p in self.fake.response_url_posts if p.status == 200}
        return sum(1 for delivery in asked if delivery.response_url in shown)

    async def wait(self, check: Callable[[], bool], timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(check, timeout=timeout)

    def limit_next_reply(self, retry_after: int) -> int:
        self.fake.fail_next("response_url", status=429)
        return 1  # what the fake's response_url says

    async def take_down(self) -> str | None:
        await self.fake.kill_socket()
        await self.fake.wait_for(lambda: self.fake.refused_socket_connects >= 1, timeout=10)
        return "the Slack Socket Mode connection is down (reconnecting)"

    async def bring_back(self) -> bool:
        self.fake.revive_socket()  # slack_sdk retries every ten seconds or so: not waited for
        return False
