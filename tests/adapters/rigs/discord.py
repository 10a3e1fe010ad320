"""Discord: the real discord.py client against FakeDiscord, one guild with two channels."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import aiohttp

from adapters.discord.adapter import DiscordAdapter
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.testing.clock import FakeClock
from tests.adapters import test_discord as discord_tests
from tests.adapters.discord_time import virtual_waits
from tests.adapters.rigs.base import Hold, Rig, Seen, count_table
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.markdown import visible
from tests.fakes.discord_fake.models import FLAG_SUPPRESS_NOTIFICATIONS

POSTS = r"^/channels/\d+/messages$"
MEMBERS = 100


def posts(channel: ChannelRef | None) -> str:
    """The path of posts (in ``channel`` only, if given)."""
    return POSTS if channel is None else rf"^/channels/{channel.channel}/messages$"


MEMBER0 = 555_000_000_000_000_000


class HeldTime(discord_tests.VirtualTime):
    """The test module's virtual time, its sleeps through a :class:`Hold`."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = Hold(self.bot.monotonic, self.advance)

    async def sleep(self, seconds: float) -> None:
        await self.hold.sleep(seconds)


class DiscordRig(Rig):
    name = "discord"
    platform: ClassVar[Platform] = Platform("discord")

    def __init__(self) -> None:
        super().__init__()
        self.vt = HeldTime()
        self._world: discord_tests.World | None = None
        self._cfg: Any = None

    @property
    def world(self) -> discord_tests.World:
        assert self._world is not None
        return self._world

    @property
    def fake(self) -> FakeDiscord:
        return self.world.fake

    @property
    def clock(self) -> FakeClock:
        return self.vt.bot

    def advance(self, seconds: float) -> None:
        self.vt.advance(seconds)

    @property
    def hold(self) -> Hold:
        return self.vt.hold

    @property
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        return self.world.ref(self.world.results), self.world.ref(self.world.union)

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        # discord.py's rate-limit waits move the virtual time too, through the hold
        # (tests.adapters.discord_time)
        with virtual_waits(self.vt.fake, self.vt.sleep):
            async with FakeDiscord(token=discord_tests.TOKEN, clock=self.vt.fake) as fake:
                guild = fake.add_guild("Bessemer Watch")
                channels = [
                    fake.add_channel(guild, n) for n in ("results", "union", "news", "admin")
                ]
                role = fake.add_role(guild, "count-admins")
                for member in range(MEMBERS):  # who may subscribe a channel
                    fake.add_member(guild, MEMBER0 + member, f"member-{member}", permissions=1 << 4)
                self._world = discord_tests.World(fake, self.vt, guild, *channels, role)
                self._cfg = discord_tests.config(tmp_path, self._world, count_table(title))
                async with self.bots() as app:
                    yield app

    @asynccontextmanager
    async def bot(self) -> AsyncIterator[App]:
        async with discord_tests.running(self.world, self._cfg) as bot:
            yield bot.app

    @property
    def adapter(self) -> DiscordAdapter:
        adapter = self.app.adapters[self.platform]
        assert isinstance(adapter, DiscordAdapter)
        return adapter

    def seen(self, channel: ChannelRef) -> list[Seen]:
        found = []
        for m in discord_tests.bot_posts(self.fake, int(channel.channel)):
            if m.deleted:
                continue
            texts = [m.content]
            for embed in m.embeds:
                texts += [embed.get("title", ""), embed.get("description", "")]
                for f in embed.get("fields", []):
                    texts += [f["name"], f["value"]]
                texts.append(embed.get("footer", {}).get("text", ""))
            pings = [f"user {u}" for u in m.mentions] + [f"role {r}" for r in m.mention_roles]
            if m.mention_everyone:
                pings.append("everyone")
            shown = "\n".join(visible(t) for t in texts if t)
            quiet = bool(m.flags & FLAG_SUPPRESS_NOTIFICATIONS)
            found.append(Seen(str(m.id), shown, len(m.attachments), tuple(pings), quiet))
        return found

    def lose_next_answer(self, *, chart: bool = False, channel: ChannelRef | None = None) -> None:
        # The chart goes in the same request as its message: one answer to lose either way.
        self.fake.fail_next(posts(channel), 503, after_commit=True)

    def limit_next_post(self, channel: ChannelRef, retry_after: int) -> None:
        self.fake.fail_next(posts(channel), 429, retry_after=retry_after)

    def hang(self, channel: ChannelRef) -> asyncio.Event:
        return self.fake.hangs.hang(channel.channel)

    async def wait_until(self, check: Callable[[], bool]) -> None:
        await self.fake.wait_for(check, timeout=10)

    def fail_next_post(self, times: int = 1) -> None:
        self.fake.fail_next(POSTS, 503, times)

    async def remove(self, channel: ChannelRef) -> None:
        deleted = asyncio.create_task(
            self.adapter.gateway_client(self.world.guild).wait_for(
                "guild_channel_delete", timeout=5
            )
        )
        self.fake.delete_channel(int(channel.channel))
        await deleted

    def deny_posting(self, channel: ChannelRef) -> None:
        self.fake.revoke_send(int(channel.channel))

    async def delete(self, channel: ChannelRef, message_id: str) -> None:
        url = f"{self.fake.base_url}/channels/{channel.channel}/messages/{message_id}"
        headers = {"Authorization": f"Bot {discord_tests.TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as mod, mod.delete(url) as resp:
            assert resp.status == 204

    async def command(self, channel: ChannelRef, member: int, text: str) -> Any:
        verb, *rest = text.split()
        options = [{"name": "count", "type": 3, "value": rest[0]}] if rest else []
        return await self.fake.inject_slash_command(
            self.world.guild, int(channel.channel), MEMBER0 + member, "count", options,
            subcommand=verb,
        )  # fmt: skip

    def answered(self, asked: list[Any]) -> int:
        return sum(1 for ix in asked if discord_tests.answered(ix))

    async def wait(self, check: Callable[[], bool], timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(check, timeout=timeout)

    def limit_next_reply(self, retry_after: int) -> int:
        self.fake.fail_next(r"^/webhooks/", 429, method="POST", retry_after=retry_after)
        return retry_after

    async def take_down(self) -> str | None:
        await self.fake.kill_gateway()
        await self.fake.wait_for(lambda: self.fake.gateway.refused >= 1, timeout=10)
        return "the Discord gateway is disconnected (reconnecting)"

    async def bring_back(self) -> bool:
        self.fake.revive_gateway()  # discord.py reconnects (and RESUMEs) after its backoff
        await self.fake.wait_for(lambda: self.fake.gateway.resume_count >= 1, timeout=10)
        await self.fake.gateway.flush()
        return True
