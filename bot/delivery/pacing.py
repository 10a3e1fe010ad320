"""Rate limits as buckets derived per request (the idea of discord.py's ``Route.bucket``).

A request names what it calls, a :class:`Route`: the platform's method (Slack's
``chat.postMessage``) or route (Discord's ``POST /channels/{channel_id}/messages``) and the
channel it acts on. A platform's :class:`Limits` say which :class:`Bucket` budgets each route
draws from (``routes``) and which every request draws from (``every``, e.g. Discord's 50 per
second); a bucket counts for the whole platform or, ``per_channel``, for each channel apart.
The :class:`Pacer` derives a request's buckets from its route and waits for a slot in each, so
one mechanism paces posts, edits, history reads and file uploads alike; adding a method is a
line in an adapter's table, not a field here.

Slots are taken in one fixed order (channel buckets first, then platform buckets, each by
name), so two requests can never each hold a slot the other waits for. A 429 the platform
answered anyway (it counts limits we do not know, or shares them with other apps) holds a
platform-wide route's buckets for the ``retry_after`` it gave (:meth:`Pacer.hold`); a global one
(:meth:`Pacer.said`) also lowers the bucket's limit to what this instance's own requests show
the platform let through, which climbs back later and is reset when the instance takes a
shared budget over (:meth:`Pacer.reset`).
A route marked ``urgent`` (a command's reply, ``bot.delivery.replies``) takes each slot
before the routine requests waiting for it.

A request's slots are booked when it may start and closed when its answer arrives: an adapter
whose client library lets it see the answer's status and headers come in calls
:func:`answered` then (Discord's, from aiohttp's trace), before the library reads the body and
hands the result back; otherwise they close when the request's block ends. The platform counted
the request before it answered, so the window counted from either moment holds
(``bot.delivery.ratelimit``); the earlier one wastes less of the budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from bot.base.clock import Clock, Sleep
from bot.delivery.ratelimit import RateLimiter, Slot
from bot.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Window:
    """At most ``limit`` requests in any ``seconds``."""

    limit: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.limit} per {self.seconds:g} s"


@dataclass(frozen=True, slots=True)
class Bucket:
    """A budget that some requests share: ``window``, for the whole platform (a workspace, a
    bot) or, with ``per_channel``, for each channel apart."""

    name: str
    window: Window
    per_channel: bool = False
    reserved: int = 0
    """On a store shared by instances, the requests per window a platform-wide bucket keeps
    for those made outside the pacer, by any instance (start-ups: ``bot.delivery.shared``'s
    :class:`~bot.delivery.shared.OutsideShare`); the holder of the budget paces the rest."""

    def split(self) -> tuple[Window, Window]:
        """The window the holder paces, and the reserved one (at least one request left to
        the holder)."""
        kept = min(self.reserved, self.window.limit - 1)
        w = self.window
        return Window(w.limit - kept, w.seconds), Window(kept, w.seconds)


@dataclass(frozen=True, slots=True)
class Route:
    """One request as the limits see it: what it calls, and the channel it acts on."""

    method: str
    channel: str | None = None
    urgent: bool = False
    """A command's reply (``bot.delivery.replies``): someone is waiting for it, so it goes
    before the routine requests waiting for the same buckets, and outside ``ROOM``."""
    direct: bool = False
    """For a person's direct message (a follow, ``DeliveryAction.DIRECT``): the same buckets,
    but a ``ROOM`` of its own, so that a fan-out to followers takes turns with the channels'
    posts at the platform-wide buckets instead of queueing ahead of them."""


@dataclass(frozen=True, slots=True)
class Limits:
    """A platform's sending limits: the buckets each route draws from, and those every request
    draws from. A route not in ``routes`` draws from ``every`` only."""

    routes: Mapping[str, tuple[Bucket, ...]] = field(default_factory=dict)
    every: tuple[Bucket, ...] = ()
    startup_requests: int = 0
    """Requests the adapter makes while starting, under ``every`` (the pacer counts them, so
    that the first paced requests do not pile on top of them in one window)."""
    apart: frozenset[str] = frozenset()
    """Routes that do not draw from ``every`` (Discord's interaction responses are not bound
    to its global limit)."""

    def buckets(self, route: Route) -> tuple[Bucket, ...]:
        """The buckets ``route`` draws from, in the order their slots are taken."""
        every = () if route.method in self.apart else self.every
        mine = {b.name: b for b in (*self.routes.get(route.method, ()), *every)}
        return tuple(sorted(mine.values(), key=lambda b: (not b.per_channel, b.name)))

    def named(self) -> dict[str, Bucket]:
        """Every bucket, by name."""
        out = {b.name: b for bs in self.routes.values() for b in bs}
        out.update((b.name, b) for b in self.every)
        return out

    def with_windows(self, windows: Mapping[str, Window]) -> Limits:
        """These limits with some buckets' windows replaced, by bucket name (the operator's
        ``limits`` table; tests against faster fakes). :class:`ConfigError` for a name that no
        bucket has."""
        unknown = sorted(set(windows) - set(self.named()))
        if unknown:
            known = ", ".join(sorted(self.named()))
            raise ConfigError(f"limits: no bucket named {', '.join(unknown)} (known: {known})")

        def swap(b: Bucket) -> Bucket:
            w = windows.get(b.name)
            return b if w is None else Bucket(b.name, w, b.per_channel, b.reserved)

        return Limits(
            routes={m: tuple(swap(b) for b in bs) for m, bs in self.routes.items()},
            every=tuple(swap(b) for b in self.every),
            startup_requests=self.startup_requests,
            apart=self.apart,
        )

    def for_holder(self) -> Limits:
        """These limits as the holder of a budget shared by instances paces them: each
        platform-wide bucket less its reserved share, in which the start-up requests are
        counted too (``Bucket.reserved``)."""

        def held(b: Bucket) -> Bucket:
            if b.per_channel or not b.reserved:
                return b
            return Bucket(b.name, b.split()[0], b.per_channel, b.reserved)

        return Limits(
            routes={m: tuple(held(b) for b in bs) for m, bs in self.routes.items()},
            every=tuple(held(b) for b in self.every),
            apart=self.apart,
        )


UNLIMITED = Limits()
"""No limits at all (the console, tests)."""

LimitSaid = Callable[[str, float], None]
"""What an adapter calls when the platform answered a 429 for a whole platform-wide bucket
(Discord's global limit), which its client library may have waited out by itself: the bucket's
name and the seconds the platform said to wait (``Pacer.said``)."""
PACED: ContextVar[bool] = ContextVar("paced", default=False)
"""True while a request runs inside its slots (``bot.delivery.courier.DeliveryPace``): an
adapter that sees every request its client library makes tells those the pacer counted from
those made outside it (``OutsideShare``)."""
ANSWERED: ContextVar[Callable[[], None] | None] = ContextVar("answered", default=None)
"""Set inside a request's slots (:meth:`Pacer.slot`): closes them (:func:`answered`)."""


def answered() -> None:
    """The answer to the request being made now has arrived (its status and headers): close
    its slots, so that each counts its window from now rather than from when the request's
    block ends (see the module docstring). Nothing outside a request's slots.

    For an adapter whose client library reports each answer where the request is made (an
    ``aiohttp`` trace's ``on_request_end``, which comes once the headers are read and before
    the body is). A block of :class:`Pace` makes one request: a second one in the same block
    would go out under slots already closed."""
    close = ANSWERED.get()
    if close is not None:
        close()


ROOM = 4
"""Requests of one method at most between their channel's slots and the platform-wide ones
(``Pacer.slot``): each method has its own room, so that requests waiting for one method's
budget (Slack's uploads) never keep another method's (its posts) from theirs. Urgent ones
take no room: they note no attempt."""
SWEEP_EVERY = 256
"""Per-channel limiters made between two sweeps of the idle ones (they are forgotten)."""


class Pace(Protocol):
    """How an adapter paces one request: ``async with pace(route, delivers=...):`` around it.

    ``delivers``: the request carries the delivery out (it posts or edits its message). Once
    its channel's turn is granted, just before it waits for the platform-wide one (among at
    most ``ROOM`` requests of its method), the dispatcher durably notes the attempt
    (so that a crash afterwards leaves the delivery "in doubt", to be confirmed from the channel
    before it is sent again), or raises :class:`~bot.errors.DeliveryCancelled` instead when the
    delivery must no longer go out (its subscription was removed meanwhile). Errors are to be
    translated inside the block, so that the pacer sees a :class:`~bot.errors.RateLimited`."""

    def __call__(
        self, route: Route, *, delivers: bool = False
    ) -> AbstractAsyncContextManager[None]:
        """Wait for the route's turn, then run the request in the block."""
        ...


@asynccontextmanager
async def unpaced(route: Route, *, delivers: bool = False) -> AsyncIterator[None]:
    """A :class:`Pace` that does not wait (tests)."""
    yield


class Turns(Protocol):
    """A platform-wide bucket shared with other instances (``bot.delivery.shared``)."""

    async def turn(self) -> None:
        """Wait until this instance may send under the bucket (raise when it may not)."""

    async def hold(self, seconds: float) -> None:
        """Take no turn, in any instance, for ``seconds``."""

    def mine(self) -> bool:
        """Whether this instance sends under the bucket now (as far as it knows)."""


class Pacer:
    """The slots of one platform's buckets, taken per request as its route says; ``shared``:
    the platform-wide buckets shared with other instances, by name, whose turn a request also
    waits for once its own slots are granted (:meth:`turn`), and whose holder's share only it
    paces (``Limits.for_holder``)."""

    def __init__(
        self, limits: Limits, clock: Clock, sleep: Sleep, shared: Mapping[str, Turns] = {}
    ) -> None:
        self.limits = limits.for_holder() if shared else limits
        self.clock = clock
        self.sleep = sleep
        self.shared = dict(shared)
        self._holds: set[asyncio.Task[None]] = set()
        self._limiters: dict[tuple[str, str | None], RateLimiter] = {}
        self._made = 0
        self._rooms: dict[str, asyncio.Semaphore] = {}
        self._buckets: dict[str, tuple[Bucket, ...]] = {}
        for bucket in self.limits.every:
            self._limiter(bucket, None).note(self.limits.startup_requests)

    def _limiter(self, bucket: Bucket, channel: str | None) -> RateLimiter:
        key = (bucket.name, channel if bucket.per_channel else None)
        limiter = self._limiters.get(key)
        if limiter is None:
            if key[1] is not None:
                self._made += 1
                if self._made % SWEEP_EVERY == 0:
                    self._sweep()
            w = bucket.window
            limiter = self._limiters[key] = RateLimiter(
                w.limit, w.seconds, self.clock, even=not bucket.per_channel
            )
        return limiter

    def _buckets_of(self, route: Route) -> tuple[Bucket, ...]:
        """``self.limits.buckets(route)``, worked out once per method (what a route draws from
        depends on its method alone): every request asks twice."""
        found = self._buckets.get(route.method)
        if found is None:
            found = self._buckets[route.method] = self.limits.buckets(route)
        return found

    def _sweep(self) -> None:
        """Forget the per-channel limiters with nothing to remember (a fan-out to thousands of
        channels would otherwise keep one per channel for ever)."""
        for key in [k for k, v in self._limiters.items() if k[1] is not None and v.idle()]:
            del self._limiters[key]

    def limiters(self) -> int:
        """How many limiters are kept (the platform-wide ones and the busy channels')."""
        return len(self._limiters)

    def limit_of(self, name: str) -> int:
        """The limit the platform-wide bucket ``name`` is paced for now (0: no such bucket)."""
        bucket = self.limits.named().get(name)
        if bucket is None or bucket.per_channel:
            return 0
        return self._limiter(bucket, None).limit

    def said(self, name: str, retry_after: float) -> None:
        """The platform answered a 429 for the whole platform-wide bucket ``name``: no request
        is taken under it, here or in any instance, for ``retry_after``; and what the platform
        let through is learned, from this instance's own requests under the bucket only.

        Its window began a window before it ends (``retry_after`` from now), so the platform
        allowed no more than the requests that ended since: the limit is lowered to that
        (climbing back later: ``bot.delivery.ratelimit``). Nothing is learned when the 429 says
        nothing about this instance's pace: it does not send under the bucket now (another
        instance holds a shared one: its own requests were start-ups, made outside the pacer);
        none of its requests fell in the window (another app's, or a start-up's); or
        ``retry_after`` is a window or more (a hold, not the rest of a window: a storm)."""
        bucket = self.limits.named().get(name)
        if bucket is None or bucket.per_channel:
            return
        limiter = self._limiter(bucket, None)
        turns = self.shared.get(name)
        if retry_after < bucket.window.seconds and (turns is None or turns.mine()):
            # Discord's window began this long before now (it said to wait out the rest of it).
            began = self.clock.monotonic() + retry_after - bucket.window.seconds
            before, counted = limiter.limit, limiter.counted(since=began)
            if 0 < counted < before:
                limiter.lower(counted)
                log.warning(
                    "the platform allows fewer requests than %s: pacing it for %d per %g s",
                    bucket.window, limiter.limit, bucket.window.seconds,
                )  # fmt: skip
        self._hold(bucket, retry_after)

    def reset(self) -> None:
        """Forget every lowered limit (this instance took a shared budget over: it starts
        from the setting, not from what it learned while another instance sent)."""
        for (_, channel), limiter in self._limiters.items():
            if channel is None:
                limiter.reset()

    @asynccontextmanager
    async def slot(
        self,
        route: Route,
        ready: Callable[[], Awaitable[None]] | None = None,
        *,
        granted: Callable[[], None] | None = None,
    ) -> AsyncIterator[None]:
        """Wait for a slot in each of the route's buckets, run the request in the block, and
        count every slot from the request's answer (:func:`answered`), or from the block's end.

        ``ready`` (noting the attempt in the store) is awaited once the channel's slots are
        granted and before the platform-wide ones are waited for, by at most ``ROOM`` requests
        of the route's method at a time: so that its time does not count inside the
        platform-wide slots (a slot is taken again a window after its request *ended*: what the
        slot holds slows the rate), and a crash leaves at most that many deliveries per method
        noted but not sent. Each method has its own room (and its direct messages another):
        a request waiting for one method's budget never holds up a request of another.
        ``granted`` is told as soon as the channel's own slots are granted (what the request
        waits for after that is shared)."""
        buckets = self._buckets_of(route)
        urgent = route.urgent
        slots: list[tuple[RateLimiter, Slot]] = []

        def close() -> None:
            for limiter, slot in slots:
                limiter.done(slot)

        async with AsyncExitStack() as taken:
            for bucket in buckets:
                if bucket.per_channel:
                    limiter = self._limiter(bucket, route.channel)
                    slot = await taken.enter_async_context(limiter.slot(self.sleep, urgent=urgent))
                    slots.append((limiter, slot))
            if granted is not None:
                granted()
            key = f"{route.method} (direct)" if route.direct else route.method
            room = self._rooms.get(key)
            if room is None:
                room = self._rooms[key] = asyncio.Semaphore(ROOM)
            async with contextlib.nullcontext() if urgent else room:
                if ready is not None:
                    await ready()
                for bucket in buckets:
                    if not bucket.per_channel:
                        limiter = self._limiter(bucket, None)
                        slot = await taken.enter_async_context(
                            limiter.slot(self.sleep, urgent=urgent)
                        )
                        slots.append((limiter, slot))
            token = ANSWERED.set(close)
            try:
                yield
            finally:
                ANSWERED.reset(token)

    async def turn(self, route: Route) -> None:
        """Check, last, right before the request goes out (inside :meth:`slot`), that this
        instance still holds each shared bucket ``route`` draws from, and wait out a hold that
        another instance's 429 put on it."""
        for bucket in self._buckets_of(route):
            turns = None if bucket.per_channel else self.shared.get(bucket.name)
            if turns is not None:
                await turns.turn()

    def hold(self, route: Route, seconds: float) -> None:
        """The platform answered 429 to ``route``: when all its buckets are platform-wide (a
        Slack tier), they take no request for ``seconds``. A route with a channel bucket is
        most likely limited for that channel alone: only that delivery waits."""
        buckets = self._buckets_of(route)
        if any(b.per_channel for b in buckets):
            return
        for bucket in buckets:
            self._hold(bucket, seconds)

    def _hold(self, bucket: Bucket, seconds: float) -> None:
        self._limiter(bucket, None).hold(seconds)
        turns = self.shared.get(bucket.name)
        if turns is not None:  # every instance waits too
            task = asyncio.create_task(turns.hold(seconds))
            self._holds.add(task)
            task.add_done_callback(self._holds.discard)
