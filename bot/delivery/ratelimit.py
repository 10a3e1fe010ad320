"""Pacing, so that the bot stays under a platform's limits instead of drawing 429s.

Platforms count requests in windows ("50 per second", "5 per 5 seconds per channel"), by when
the requests *arrive*. A token bucket of the same rate lets nearly twice that through one window
after an idle spell, so the limiter here books one slot per request and lets a request go only
when the ``limit``-th most recent one is a whole ``window`` (plus 0.2%, for clocks that run at
slightly different rates) in the past.

A request's arrival lies somewhere between its start and its response, and that delay varies,
so a slot counts from when the request's answer *arrived* (``done``), not from when it was
booked: two requests that share a slot then arrive at least a window apart, whatever the network
did in between. That satisfies both sliding windows and Discord's fixed windows. The platform has
counted a request before it answers, so the slot may be closed as soon as the answer's status
and headers are in (``bot.delivery.pacing.answered``), before the client reads and handles the
body: that time is not the platform's, and closing later only wastes budget (a slot is taken
again a window after it closed). A slot closed once stays closed where it was.

Callers take their turns in arrival order, so concurrent callers are served fairly, except
that an ``urgent`` caller (a command's reply, someone is waiting for it) goes before every
routine one still waiting (:class:`Turns`); a caller waits until fewer than ``limit`` requests
have finished within the last window or are still in flight, and the limiter is never
overdrawn.
A limit the platform showed to be smaller (:meth:`RateLimiter.lower`, after a 429) is not kept
for ever: once ``RECOVER_AFTER`` windows have passed without another lowering it climbs back
towards its setting by a tenth of the setting (at least one request) per window, as TCP's
additive increase does (a limit that really is smaller costs one 429 per climb, a spurious
lowering heals within about ten windows); :meth:`RateLimiter.reset` puts it back at once.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.base.clock import Clock, Sleep

RECOVER_AFTER = 5
"""Windows without a lowering before a lowered limit starts to climb back."""


class Slot:
    """One request: ``at`` is when it started, then, once ``finished``, when it was answered
    (or ended)."""

    __slots__ = ("at", "finished")

    def __init__(self, at: float) -> None:
        self.at = at
        self.finished = False


class Turns:
    """One turn at a time, first come first served within each of two classes: every urgent
    caller waiting goes before every routine one (an ``asyncio.Lock`` with a priority)."""

    def __init__(self) -> None:
        self._held = False
        self._waiting: list[tuple[bool, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @asynccontextmanager
    async def turn(self, *, urgent: bool = False) -> AsyncIterator[None]:
        """Wait for the turn (``urgent``: before the routine callers waiting), hold it in the
        block."""
        if self._held or self._waiting:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (not urgent, next(self._order), granted))
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._pass()  # handed the turn just as it was cancelled: hand it on
                raise
        else:
            self._held = True
        try:
            yield
        finally:
            self._pass()

    def _pass(self) -> None:
        """Hand the turn to the first caller still waiting, or free it."""
        while self._waiting:
            _, _, granted = heapq.heappop(self._waiting)
            if not granted.done():
                granted.set_result(None)  # it holds the turn now: nobody cuts in
                return
        self._held = False


class RateLimiter:
    def __init__(
        self, limit: int, window: float, clock: Clock, *, margin: float = 0.002, even: bool = False
    ) -> None:
        """``even``: requests start at least ``window / limit`` apart, not in bursts (a burst
        queues at the platform, so its last requests answer late and their slots come back
        late: evenly spaced, each answers at once and the limit is used nearly whole)."""
        if limit < 1 or window <= 0:
            raise ValueError("a rate limit needs at least one request per positive window")
        self.setting = limit
        """The limit configured (what a lowered one climbs back to)."""
        self._lowered = limit
        self._lowered_at = float("-inf")
        self.window = window * (1 + margin)
        self.even = even
        self.clock = clock
        self._due = float("-inf")
        self._slots: list[Slot] = []
        self._held_until = float("-inf")
        self._turns = Turns()  # first come, first served; urgent ones first

    def delay(self) -> float:
        """Seconds until a request could start, as far as is known now.

        A request still in flight counts as arriving now (its answer, not its start, tells when
        the platform saw it), so this can grow while requests are in flight.
        """
        now = self.clock.monotonic()
        held = max(0.0, self._held_until - now)
        if self.even:
            held = max(held, self._due - now)
        self._slots = [s for s in self._slots if not (s.finished and s.at + self.window <= now)]
        if len(self._slots) < self.limit:
            return held
        busy = sorted(s.at if s.finished else now for s in self._slots)
        return max(held, busy[-self.limit] + self.window - now)

    def hold(self, seconds: float) -> None:
        """Let no request start for ``seconds`` from now (the platform said to wait)."""
        self._held_until = max(self._held_until, self.clock.monotonic() + max(0.0, seconds))

    @property
    def limit(self) -> int:
        """The requests let through per window now: the setting, or a lowered limit climbing
        back to it (see the module docstring)."""
        if self._lowered >= self.setting:
            return self.setting
        quiet = self.clock.monotonic() - self._lowered_at - RECOVER_AFTER * self.window
        if quiet < 0:
            return self._lowered
        step = max(1, self.setting // 10)
        return min(self.setting, self._lowered + step * (1 + int(quiet / self.window)))

    def lower(self, limit: int) -> None:
        """The platform allows fewer requests per window than the limit says: ``limit`` now
        (never below one), climbing back from here once no more lowerings come."""
        self._lowered = max(1, min(self.limit, limit))
        self._lowered_at = self.clock.monotonic()

    def reset(self) -> None:
        """Forget what was lowered: the setting again."""
        self._lowered = self.setting

    def counted(self, since: float) -> int:
        """Requests that finished at or after ``since`` (the platform has counted them)."""
        return sum(1 for s in self._slots if s.finished and s.at >= since)

    def idle(self) -> bool:
        """Nothing in flight, nothing within the last window, no hold: forgetting this limiter
        loses nothing."""
        return self.delay() == 0 and not self._slots

    def note(self, requests: int) -> None:
        """Count ``requests`` made just now outside the limiter (an adapter's own start-up
        calls), so that the paced ones cannot pile on top of them in the same window."""
        now = self.clock.monotonic()
        for _ in range(min(requests, self.limit)):
            slot = Slot(now)
            slot.finished = True
            self._slots.append(slot)

    def done(self, slot: Slot) -> None:
        """The request of ``slot`` has been answered (or has ended without an answer): its
        window counts from now, or from when it was first done."""
        if slot.finished:
            return
        slot.at = max(slot.at, self.clock.monotonic())
        slot.finished = True

    async def acquire(self, sleep: Sleep, *, urgent: bool = False) -> Slot:
        """Wait for this request's turn (``urgent``: before the routine ones waiting); the
        caller must ``done()`` the slot when it finishes."""
        async with self._turns.turn(urgent=urgent):
            while (wait := self.delay()) > 0:
                await sleep(wait)
            slot = Slot(self.clock.monotonic())
            self._slots.append(slot)
            if self.even:  # spaced from the previous one's due time, not from when its
                # process got round to it: a turn late by up to half a spacing does not push
                # every later turn back
                spacing = self.window / self.limit
                due = slot.at if self._due == float("-inf") else self._due
                self._due = max(due, slot.at - spacing / 2) + spacing
            return slot

    @asynccontextmanager
    async def slot(self, sleep: Sleep, *, urgent: bool = False) -> AsyncIterator[Slot]:
        """Wait for a turn, run the request in the block, and count the slot from its end, or
        from its answer when the block calls ``done`` on the slot it is given earlier."""
        taken = await self.acquire(sleep, urgent=urgent)
        try:
            yield taken
        finally:
            self.done(taken)
