"""Webhooks: the real adapter (aiohttp through the egress guard) POSTing to loopback receivers
(``tests.fakes.webhook_fake``), two JSON targets whose receiver verifies each signature and
deduplicates by ``Idempotency-Key``. A receiver is no chat: nobody types commands there."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from adapters.webhook.adapter import WebhookAdapter
from adapters.webhook.plugin import PLUGIN
from adapters.webhook.settings import WebhookSettings, env_name
from bot.domain.subscription import ChannelRef, Platform
from bot.platform import Context, Plugins
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.settings.secrets import Secret
from bot.testing.clock import FakeClock
from tests.adapters.rigs.base import Hold, Rig, Seen, count_table
from tests.fakes.webhook_fake import FakeReceivers

WEBHOOK = Platform("webhook")
TARGETS = ("results", "union-hall")


def plugins() -> Plugins:
    """The installed plug-ins, and this one where its entry point is not installed (a shared
    development venv)."""
    installed = Plugins.installed()
    return installed if "webhook" in installed else Plugins([*installed.values(), PLUGIN])


def secrets(fake: FakeReceivers, targets: dict[str, str]) -> dict[str, Secret]:
    """Each target's URL (``targets``: name to kind) and a JSON target's signing secret."""
    out = {}
    for name, kind in targets.items():
        url = env_name(name, "URL")
        out[url] = Secret(url, fake.url(kind, name))
        if kind == "json":
            key = env_name(name, "SECRET")
            out[key] = Secret(key, f"secret-of-{name}")
            fake.add_secret(name, f"secret-of-{name}")
    return out


def factory(cfg: Any, fake: FakeReceivers, clock: FakeClock, kinds: dict[str, str]) -> Any:
    settings = cfg.settings("webhook")
    assert isinstance(settings, WebhookSettings)

    def build(commands: Any) -> WebhookAdapter:
        context = Context(
            handle=commands.handle,
            clock=clock,
            throttle=commands.throttle,
            admins=PLUGIN.admins(settings),
            place=PLUGIN.place,
            secrets=secrets(fake, kinds),
            store=commands.db,
        )
        return WebhookAdapter(settings, context)

    return build


class WebhookRig(Rig):
    name = "webhook"
    platform: ClassVar[Platform] = WEBHOOK

    def __init__(self, kinds: dict[str, str] | None = None, **table: Any) -> None:
        """``kinds``: the targets, name to receiver (``json``, ``hooks``, ``workflows``; two
        JSON ones by default); ``table``: more of the ``[webhook]`` table (and ``admins``: the
        ``[admins]`` table)."""
        super().__init__()
        self.kinds = kinds or dict.fromkeys(TARGETS, "json")
        self.admins = table.pop("admins", None)
        self.counts = table.pop("counts", ())
        self.table = table
        self._clock = FakeClock()
        self._hold = Hold(self._clock.monotonic, self._clock.advance)
        self._fake: FakeReceivers | None = None
        self._cfg: Any = None

    @property
    def fake(self) -> FakeReceivers:
        assert self._fake is not None
        return self._fake

    @property
    def clock(self) -> FakeClock:
        return self._clock

    @property
    def hold(self) -> Hold:
        return self._hold

    @property
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        a, b, *_ = (ChannelRef(WEBHOOK, "operator", t) for t in self.kinds)
        return a, b

    def channel(self, target: str) -> ChannelRef:
        return ChannelRef(WEBHOOK, "operator", target)

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        now = lambda: self._clock.now().timestamp()  # noqa: E731
        async with FakeReceivers(now=now) as fake:
            self._fake = fake
            formats = {"json": "json", "hooks": "slack", "workflows": "teams"}
            targets = [
                {"name": t, "format": formats[k], "counts": list(self.counts)}
                for t, k in self.kinds.items()
            ]
            raw: dict[str, Any] = {
                "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
                "webhook": {
                    "allow_private_addresses": True,  # the receivers are on loopback
                    "timeout": 5.0,
                    "targets": targets,
                    **self.table,
                },
                "counts": [count_table(title)],
            }
            if self.admins is not None:
                raw["admins"] = self.admins
            self._cfg = parse(raw, tmp_path / "tallybot.toml", plugins=plugins())
            async with self.bots() as app:
                yield app

    @asynccontextmanager
    async def bot(self) -> AsyncIterator[App]:
        build = factory(self._cfg, self.fake, self._clock, self.kinds)
        app = App(
            self._cfg, {WEBHOOK: build}, clock=self._clock, sleep=self._hold.sleep, poll=False
        )
        async with app:
            yield app

    def seen(self, channel: ChannelRef) -> list[Seen]:
        return [Seen(s.key, s.text, s.images, s.pings) for s in self.fake.seen(channel.channel)]

    def lose_next_answer(self, *, chart: bool = False, channel: ChannelRef | None = None) -> None:
        # a final's chart goes in the post itself: losing "the chart's" answer is losing the post's
        self.fake.lose_answer(None if channel is None else channel.channel)

    def limit_next_post(self, channel: ChannelRef, retry_after: int) -> None:
        self.fake.fail_next(status=429, retry_after=retry_after, target=channel.channel)

    def hang(self, channel: ChannelRef) -> asyncio.Event:
        return self.fake.hangs.hang(channel.channel)

    async def wait_until(self, check: Callable[[], bool]) -> None:
        await self.fake.wait_for(check, timeout=10)

    def fail_next_post(self, times: int = 1) -> None:
        self.fake.fail_next(times, status=503)

    async def remove(self, channel: ChannelRef) -> None:
        self.fake.remove(channel.channel)

    def deny_posting(self, channel: ChannelRef) -> None:
        self.fake.deny(channel.channel)

    async def delete(self, channel: ChannelRef, message_id: str) -> None:
        self.fake.delete(message_id)
