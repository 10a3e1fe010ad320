"""One delivery's attempt as the pacer, the store and the logs see it: its key, what its log
lines carry, the ``Pace`` its requests go through (:class:`DeliveryPace`: waiting for their
slots, noting the attempt right before a request that could post it), where its channel stands
for the dispatcher's bound on work in hand (:class:`Progress`), and the counts of what became of
the deliveries (:class:`Stats`). Carried out by :mod:`bot.delivery.courier`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import lru_cache

from bot.base.clock import Clock
from bot.delivery.pacing import PACED, Pacer, Route
from bot.domain.message import Message
from bot.errors import DeliveryCancelled, RateLimited
from bot.store.outbox import Delivery


def where(d: Delivery) -> dict[str, object]:
    """What every delivery log line carries (``extra=``)."""
    return {
        "count": d.count_id,
        "platform": d.channel.platform,
        "channel": f"{d.channel.workspace}/{d.channel.channel}",
        "delivery": d.id,
        "action": d.action.value,
    }


@lru_cache(maxsize=32)
def message_of(payload: str) -> Message:
    """The message a delivery's ``payload`` holds (``Message.from_json``), read once for the
    deliveries that carry the same one (a fan-out's, to hundreds of channels): a ``Message``
    is immutable, so they share it."""
    return Message.from_json(payload)


def key_of(d: Delivery) -> str:
    """The delivery's key: the same on every attempt, carried by the message it posts."""
    return f"tb{d.id}"


@dataclass
class Stats:
    sent: int = 0
    edited: int = 0
    retried: int = 0
    rate_limited: int = 0
    """Retries after a 429 (not counted as failed attempts)."""
    dead: int = 0
    superseded: int = 0
    disabled: int = 0
    cancelled: int = 0
    """Dropped because their subscription was removed or disabled."""
    confirmed: int = 0
    """Found in their channel, posted by an earlier attempt, and not sent again."""
    checks: int = 0
    """Reads of a channel to look for earlier posts (one serves all of a channel's)."""
    charts: int = 0
    """Charts shown as a step of their own, after their message (``DeliveryAction.CHART``)."""
    published: int = 0
    """Calls and finals published to the channels that follow theirs (``PUBLISH``)."""


class Progress:
    """Where one channel's deliveries stand, for the dispatcher's bound on work in hand.

    A channel waiting for something of its own (a slot of its channel's bucket, a read that
    repairs what a lost answer left in doubt, a request that has not answered for ``slow_after``
    seconds) is *slow*: the dispatcher does not count it against the room of the others.
    ``changed`` is told when the channel becomes slow."""

    def __init__(self, clock: Clock, changed: Callable[[], None] = lambda: None) -> None:
        self.clock = clock
        self.changed = changed
        self._own = False
        self._repairing = 0
        self._flying: float | None = None

    def slow(self, slow_after: float) -> bool:
        if self._own or self._repairing:
            return True
        return self._flying is not None and self.clock.monotonic() - self._flying >= slow_after

    def waiting_own(self, waiting: bool) -> None:
        """A request is waiting for its channel's own slots (or no longer is)."""
        self._own = waiting
        if waiting:
            self.changed()

    def flying(self, flying: bool) -> None:
        """A request has gone out and not answered yet (or has answered)."""
        self._flying = self.clock.monotonic() if flying else None

    @asynccontextmanager
    async def repairing(self) -> AsyncIterator[None]:
        """Around a read of the channel for what earlier attempts may have posted."""
        self._repairing += 1
        self.changed()
        try:
            yield
        finally:
            self._repairing -= 1


class DeliveryPace:
    """The ``Pace`` an adapter gets for one delivery (or a check): each request waits for its
    route's buckets; one that ``delivers`` notes the attempt first (``note``), and is refused
    with :class:`DeliveryCancelled` when the delivery must no longer go out. A 429 holds the
    route's buckets for its Retry-After. ``progress`` is told where the request stands."""

    def __init__(
        self,
        pacer: Pacer,
        note: Callable[[], Awaitable[bool]] | None = None,
        progress: Progress | None = None,
        unnote: Callable[[], Awaitable[bool]] | None = None,
        *,
        direct: bool = False,
    ) -> None:
        """``unnote``: undo the note when the platform refused the delivering request with a
        429 (``RateLimited.refused``) and no delivering request of it went through before:
        nothing was posted, so it is not in doubt (None: an earlier attempt may have posted).
        ``direct``: a person's direct message (``Route.direct``: a room of its own)."""
        self.direct = direct
        self.pacer = pacer
        self.note = note
        self.unnote = unnote
        self.progress = progress or Progress(pacer.clock)
        self._through = False

    @asynccontextmanager
    async def __call__(self, route: Route, *, delivers: bool = False) -> AsyncIterator[None]:
        progress = self.progress
        if self.direct:
            route = replace(route, direct=True)
        progress.waiting_own(True)
        try:
            mine = lambda: progress.waiting_own(False)  # noqa: E731 - its channel's slots
            async with self.pacer.slot(route, lambda: self._ready(delivers), granted=mine):
                await self.pacer.turn(route)  # the instance still holds the budget: last
                progress.flying(True)
                paced = PACED.set(True)
                try:
                    yield
                except RateLimited as exc:
                    wait = exc.retry_after if exc.retry_after is not None else 1.0
                    self.pacer.hold(route, wait)
                    if delivers and exc.refused and not self._through and self.unnote:
                        await self.unnote()
                    raise
                finally:
                    PACED.reset(paced)
                    progress.flying(False)
                self._through = self._through or delivers
        finally:
            progress.waiting_own(False)

    async def _ready(self, delivers: bool) -> None:
        if delivers and self.note is not None and not await self.note():
            raise DeliveryCancelled("its subscription was removed or disabled")
