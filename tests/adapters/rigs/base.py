"""What every rig offers the contract: the bot running against a fake, and the platform's side
of things. A rig whose platform cannot do something (a terminal has no answer to lose) leaves
that method to the base, which fails the test that asked: the contract lists which rigs each
of its tests runs on."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    AsyncExitStack,
    asynccontextmanager,
    contextmanager,
)
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import func, select

from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.store.outbox import DeliveryStatus
from bot.store.schema import outbox as outbox_table
from bot.testing.clock import FakeClock

TITLE = "Amazon BHM1 union election, Bessemer AL"


def count_table(title: str = TITLE) -> dict[str, Any]:
    """``[[counts]]`` for Bessemer 2021, under ``title``."""
    return {
        "id": "bessemer-2021",
        "title": title,
        "rule": "majority",
        "tie_holder": "no",
        "eligible": 5876,
        "received": 3215,
        "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
        "source": {"kind": "manual"},
    }


@dataclass(frozen=True)
class Seen:
    """One message of the bot's, as the members of its channel see it."""

    message_id: str
    text: str
    """Every text of the message that a member reads, joined by new lines."""
    images: int
    """Pictures shown with it (a final's chart)."""
    pings: tuple[str, ...]
    """Whom the platform notified because of it."""
    quiet: bool = False
    """Sent without a notification (Telegram's ``disable_notification``, Discord's
    SUPPRESS_NOTIFICATIONS): members were not told of it."""


class Hold:
    """How far the bot's sleeps may move a rig's virtual clock.

    The rigs' time is virtual: a sleep of the bot's moves the clock instead of waiting, so a
    channel backing off for a minute would move everyone's clock by a minute, and the other
    channels would seem a minute late though nothing held them up. While a hold lasts
    (:meth:`Rig.held`) the clock moves as real time would, to each sleeper's wake time, and
    never past the hold's end: a sleep that would wake later waits (in real time) until the
    hold is lifted. So what the bot does in the meantime, it did without anyone waiting that
    long; and a worker that waits for such a sleeper before it sends anything else sends
    nothing more until then."""

    def __init__(self, monotonic: Callable[[], float], advance: Callable[[float], None]) -> None:
        self.monotonic = monotonic
        self.advance = advance
        self.until: float | None = None
        self._lifted = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        """The bot's sleep: the rig's usual virtual time (each sleep jumps the clock) unless
        held (see the class docstring)."""
        if self.until is None:
            if seconds > 0:
                self.advance(seconds)
            await asyncio.sleep(0)
            return
        wake = self.monotonic() + max(seconds, 0.0)
        while self.until is not None and wake > self.until:
            self._lifted.clear()
            await self._lifted.wait()
        ahead = wake - self.monotonic()
        if ahead > 0:
            self.advance(ahead)
        await asyncio.sleep(0)

    @contextmanager
    def held(self, seconds: float) -> Iterator[None]:
        self.until = self.monotonic() + seconds
        try:
            yield
        finally:
            self.until = None
            self._lifted.set()


class Rig(abc.ABC):
    name: ClassVar[str]
    platform: ClassVar[Platform]

    def __init__(self) -> None:
        self._app: App | None = None
        self._bots: AsyncExitStack | None = None

    @property
    def app(self) -> App:
        assert self._app is not None, "the rig is not running"
        return self._app

    @property
    @abc.abstractmethod
    def clock(self) -> FakeClock:
        """The bot's clock (and the fake's, where the fake keeps time)."""

    @property
    @abc.abstractmethod
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        """Two channels of the platform where the bot may post."""

    @abc.abstractmethod
    def running(self, tmp_path: Path, title: str) -> Any:
        """An async context manager: the fake and the bot, Bessemer 2021 under ``title``."""

    @asynccontextmanager
    async def run(self, tmp_path: Path, title: str = TITLE) -> AsyncIterator[App]:
        async with self.running(tmp_path, title) as app:
            self._app = app
            try:
                yield app
            finally:
                self._app = None

    @abc.abstractmethod
    def bot(self) -> AbstractAsyncContextManager[App]:
        """The bot on the rig's store and fake (``running`` set them up), fresh memory."""

    @asynccontextmanager
    async def bots(self) -> AsyncIterator[App]:
        """What ``running`` yields from: the bot, which ``restart`` may replace."""
        self._bots = AsyncExitStack()
        try:
            yield await self._bots.enter_async_context(self.bot())
        finally:
            await self._bots.aclose()

    async def restart(self) -> None:
        """The bot dies (what it had under way stays as it was, in the store and on the
        platform; its memory is gone) and a new one starts on the same store and fake."""
        assert self._bots is not None, "the rig is not running"
        await self._bots.aclose()
        self._bots = AsyncExitStack()
        self._app = await self._bots.enter_async_context(self.bot())

    @abc.abstractmethod
    def seen(self, channel: ChannelRef) -> list[Seen]:
        """The bot's messages in ``channel`` that members see (deleted ones not), oldest first."""

    async def settle(self) -> None:
        """Deliver everything: drain what is due, then jump time to the next retry."""
        pending = outbox_table.c.status == DeliveryStatus.PENDING.value
        for _ in range(100):
            await self.app.idle()
            async with self.app.db.connect() as conn:
                if not await conn.scalar(select(func.count()).where(pending)):
                    return
                now = self.clock.now()
                at = await conn.scalar(
                    select(func.min(outbox_table.c.next_attempt_at)).where(
                        pending, outbox_table.c.next_attempt_at > now
                    )
                )
            assert at is not None, "deliveries are due but the dispatcher sends none"
            self.advance((at - now).total_seconds())
        raise AssertionError("the outbox never emptied")

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @property
    @abc.abstractmethod
    def hold(self) -> Hold:
        """What the bot's sleeps go through (see :class:`Hold`)."""

    def held(self, seconds: float) -> AbstractContextManager[None]:
        """In the block, the bot's sleeps move the virtual clock as real time would, and
        ``seconds`` past now at most (:class:`Hold`)."""
        return self.hold.held(seconds)

    # What the platform's side can do; a platform without it keeps the base's refusal.

    def lose_next_answer(self, *, chart: bool = False, channel: ChannelRef | None = None) -> None:
        """The next post (``chart``: the next showing of a chart; ``channel``: in that channel)
        is carried out by the platform, but its answer never reaches the bot."""
        raise AssertionError(f"{self.name} has no answer to lose")

    def limit_next_post(self, channel: ChannelRef, retry_after: int) -> None:
        """The platform answers the next post in ``channel`` with a 429 on that channel's own
        bucket, saying to wait ``retry_after`` seconds."""
        raise AssertionError(f"{self.name} has no rate limits")

    def hang(self, channel: ChannelRef) -> asyncio.Event:
        """From now on the platform takes every request about ``channel`` and answers none
        (nor carries it out) until the event returned is set."""
        raise AssertionError(f"{self.name} has no request to hang")

    async def wait_until(self, check: Callable[[], bool]) -> None:
        """Return once ``check()`` holds, re-checked whenever the platform records something
        (10 s at most)."""
        raise AssertionError(f"{self.name} records nothing to wait for")

    def fail_next_post(self, times: int = 1) -> None:
        """The next ``times`` posts fail, surely without posting anything (a server error, or
        where the platform may post despite one, a 429)."""
        raise AssertionError(f"{self.name} cannot fail for a while")

    async def remove(self, channel: ChannelRef) -> None:
        """The channel is gone for the bot (deleted, or the bot removed from it)."""
        raise AssertionError(f"{self.name} has no channel to remove")

    def deny_posting(self, channel: ChannelRef) -> None:
        """The bot keeps the channel but may no longer post there (a permission taken away)."""
        raise AssertionError(f"{self.name} has no permissions to take away")

    async def delete(self, channel: ChannelRef, message_id: str) -> None:
        """A moderator deletes one of the bot's messages."""
        raise AssertionError(f"{self.name} cannot delete what it showed")

    # Commands: members typing ``/count ...``; a platform without members keeps the refusal.

    async def command(self, channel: ChannelRef, member: int, text: str) -> Any:
        """``/count text`` typed by member number ``member`` (0 to 99) in ``channel``;
        returns, once the bot has it, what ``answered`` asks about."""
        raise AssertionError(f"{self.name} has no members to type commands")

    def answered(self, asked: list[Any]) -> int:
        """How many of the commands ``asked`` have been answered."""
        raise AssertionError(f"{self.name} has no members to answer")

    async def wait(self, check: Callable[[], bool], timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Until ``check()`` holds, re-checked whenever the platform's fake records something."""
        raise AssertionError(f"{self.name} has nothing to wait for")

    def limit_next_reply(self, retry_after: int) -> int:
        """The platform answers the bot's next reply to a command with a 429, saying to wait
        ``retry_after`` seconds (where the platform lets it say so): the seconds it says."""
        raise AssertionError(f"{self.name} has no rate limits")

    async def take_down(self) -> str | None:
        """The platform becomes unreachable; the reason ``health()`` should give, or None
        where the adapter has no connection to lose."""
        return None

    async def bring_back(self) -> bool:
        """The platform is reachable again; whether the adapter is back too (False: it comes
        back later than a test waits, on the platform client's own real-time backoff)."""
        return False
