"""Live updates to the open pages: every accepted tally, once, to every viewer of its count.

The pipeline tells :meth:`Broadcaster.accepted` of each accepted tally (a call that returns at
once); a task of its own turns it into one event, encoded once, and posts it to the count's
:class:`Channel`. A channel keeps its last few events in a short log and wakes every viewer
with one ``asyncio.Event``: a viewer costs its stream and one waiting future, never a queue or
a timer of its own. A viewer that falls further behind than the log reaches (its connection
too slow to take what is sent) is dropped, and :meth:`Broadcaster.sweep` aborts the connection
of one whose write has been stuck too long, so that no viewer holds up another, nor the chat
deliveries that share the event loop. A dropped viewer reconnects and catches up from the store
(``Last-Event-ID``).

One instance learns of its own tallies only. With several instances sharing a store, each would
also ``LISTEN`` for a ``NOTIFY`` carrying ``count_id`` and ``seq`` and call :meth:`accepted`
with them (the scale-out issue).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.errors import RequestError, StoreError

log = logging.getLogger(__name__)

LOG_SIZE = 64
"""Events a channel keeps for viewers that are momentarily behind; further behind is dropped."""
PING = b": ping\n\n"


@dataclass(frozen=True, slots=True)
class Limits:
    per_ip: int = 16
    total: int = 20_000
    lifetime: float = 30 * 60.0
    """Seconds a stream stays open before it is closed (the page reconnects and catches up)."""
    write_timeout: float = 10.0
    """Seconds a write may wait for a viewer to take it before the viewer is dropped."""


@dataclass(eq=False, slots=True)
class Viewer:
    count_id: str
    ip: str
    since: float
    abort: Callable[[], None]
    """Closes the viewer's connection at once (its pending write fails)."""
    position: int = 0
    """The serial of the last log entry this viewer has taken."""
    writing_since: float | None = None
    closed: bool = False


@dataclass(eq=False, slots=True)
class Channel:
    """One count's viewers and its latest events."""

    log: deque[tuple[int, int, bytes]] = field(default_factory=lambda: deque(maxlen=LOG_SIZE))
    """``(serial, seq, data)``; ``seq`` 0 for a ping."""
    serial: int = 0
    woken: asyncio.Event = field(default_factory=asyncio.Event)
    viewers: set[Viewer] = field(default_factory=set)

    def post(self, seq: int, data: bytes) -> None:
        self.serial += 1
        self.log.append((self.serial, seq, data))
        self.woken.set()  # every waiter is woken; those that come later wait for the next one
        self.woken.clear()

    def since(self, viewer: Viewer) -> list[tuple[int, bytes]] | None:
        """The ``(seq, data)`` the viewer has not taken yet; None if it fell too far behind."""
        if viewer.position >= self.serial:
            return []
        if not self.log or self.log[0][0] > viewer.position + 1:
            return None
        out = [(seq, data) for serial, seq, data in self.log if serial > viewer.position]
        viewer.position = self.serial
        return out


EventFor = Callable[[str, int], Awaitable[bytes | None]]
"""The encoded event of a count's accepted tally (count id, seq); None: not to be shown."""


class Broadcaster:
    """The open streams of every count, and the task that posts accepted tallies to them."""

    def __init__(self, event_for: EventFor, limits: Limits = Limits()) -> None:
        self.event_for = event_for
        self.limits = limits
        self.channels: dict[str, Channel] = {}
        self._per_ip: Counter[str] = Counter()
        self.viewers = 0
        self.dropped = 0
        """Viewers dropped for falling behind or a stuck write, since the start."""
        self._pending: asyncio.Queue[tuple[str, int]] = asyncio.Queue(maxsize=1024)
        self.latest: dict[str, int] = {}
        """The last seq posted per count."""
        self._watchers: set[asyncio.Future[None]] = set()

    # -- the pipeline's side ---------------------------------------------------------------

    def accepted(self, count_id: str, seq: int) -> None:
        """A tally was accepted (the pipeline's hook): returns at once, posted by :meth:`run`."""
        if count_id not in self.channels:
            self.latest[count_id] = max(seq, self.latest.get(count_id, 0))
            return  # nobody watches: nothing to word
        try:
            self._pending.put_nowait((count_id, seq))
        except asyncio.QueueFull:  # tallies faster than they can be worded: drop the viewers,
            self._drop_channel(count_id)  # who reconnect and catch up from the store

    async def run(self) -> None:
        """Post every accepted tally to its count's viewers, in order; runs until cancelled."""
        while True:
            count_id, seq = await self._pending.get()
            channel = self.channels.get(count_id)
            if channel is None or seq <= self.latest.get(count_id, 0):
                self.latest[count_id] = max(seq, self.latest.get(count_id, 0))
                continue
            try:
                data = await self.event_for(count_id, seq)
            except (StoreError, RequestError) as exc:
                log.warning("live update of %s #%d not sent: %s", count_id, seq, exc)
                self._drop_channel(count_id)  # they catch up when they reconnect
                continue
            self.latest[count_id] = seq
            if data is not None and count_id in self.channels:
                self.channels[count_id].post(seq, data)

    def ping(self) -> None:
        """A comment to every stream, so that proxies and browsers keep idle ones open."""
        for channel in self.channels.values():
            channel.post(0, PING)

    # -- the viewers' side -----------------------------------------------------------------

    def join(self, count_id: str, ip: str, *, now: float, abort: Callable[[], None]) -> Viewer:
        """A new viewer of ``count_id`` (RequestError 429 or 503 past the limits)."""
        if self._per_ip[ip] >= self.limits.per_ip:
            raise RequestError(
                f"at most {self.limits.per_ip} live streams from one address", status=429
            )
        if self.viewers >= self.limits.total:
            raise RequestError("too many live streams open; try again shortly", status=503)
        channel = self.channels.get(count_id)
        if channel is None:
            channel = self.channels[count_id] = Channel()
        viewer = Viewer(count_id, ip, now, abort, position=channel.serial)
        channel.viewers.add(viewer)
        self._per_ip[ip] += 1
        self.viewers += 1
        self._moved()
        return viewer

    def leave(self, viewer: Viewer) -> None:
        if viewer.closed:
            return
        viewer.closed = True
        self.viewers -= 1
        self._per_ip[viewer.ip] -= 1
        if self._per_ip[viewer.ip] <= 0:
            del self._per_ip[viewer.ip]
        channel = self.channels.get(viewer.count_id)
        if channel is not None:
            channel.viewers.discard(viewer)
            if not channel.viewers:
                del self.channels[viewer.count_id]
        self._moved()

    async def until(self, test: Callable[[], bool]) -> None:
        """Wait until ``test()`` holds, checked whenever a viewer joins or leaves."""
        while not test():
            moved = asyncio.get_running_loop().create_future()
            self._watchers.add(moved)
            try:
                await moved
            finally:
                self._watchers.discard(moved)

    def _moved(self) -> None:
        for watcher in self._watchers:
            if not watcher.done():
                watcher.set_result(None)

    async def next(self, viewer: Viewer) -> list[tuple[int, bytes]] | None:
        """What the viewer is to be sent next (waiting for it); None: it is to be closed."""
        channel = self.channels.get(viewer.count_id)
        while channel is not None and not viewer.closed:
            out = channel.since(viewer)
            if out is None:
                self.dropped += 1
                return None
            if out:
                return out
            await channel.woken.wait()
        return None

    def sweep(self, now: float) -> int:
        """Drop the viewers stuck writing (their connections aborted) and end the streams past
        their lifetime (closed in good order: the page reconnects); how many."""
        closed = 0
        for channel in list(self.channels.values()):
            for viewer in list(channel.viewers):
                writing = viewer.writing_since
                if writing is not None and now - writing > self.limits.write_timeout:
                    self.dropped += 1
                    self.leave(viewer)
                    viewer.abort()
                    closed += 1
                elif now - viewer.since > self.limits.lifetime:
                    self.leave(viewer)
                    closed += 1
            channel.woken.set()  # closed viewers waiting for an event see they are closed
            channel.woken.clear()
        return closed

    def close(self) -> None:
        """End every stream in good order (the server is stopping; the pages reconnect)."""
        for channel in list(self.channels.values()):
            for viewer in list(channel.viewers):
                self.leave(viewer)
            channel.woken.set()
            channel.woken.clear()

    def _drop_channel(self, count_id: str) -> None:
        channel = self.channels.get(count_id)
        if channel is None:
            return
        for viewer in list(channel.viewers):
            self.dropped += 1
            self.leave(viewer)
            viewer.abort()

    def per_ip(self, ip: str) -> int:
        return self._per_ip[ip]
