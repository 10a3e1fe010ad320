"""Live updates to the open pages: every accepted tally, once, to every viewer of its count.

The pipeline tells :meth:`Broadcaster.accepted` of each accepted tally (a call that returns at
once); a task of its own turns it into one event, encoded once, and writes it to the connection
of every viewer of the count, in slices that let the rest of the bot (chat deliveries above
all) run in between. A write never waits: it goes into the connection's own buffer, and a
viewer whose buffer holds more than :data:`MAX_BUFFERED` bytes (it does not read what it is
sent) is dropped, its connection aborted; so is one whose buffer has not moved for
``write_timeout`` seconds (:meth:`Broadcaster.sweep`). Once caught up, a viewer is its
connection's protocol (:class:`Viewer`, handed over by :mod:`bot.web.stream`): it costs the
connection and one small object, no task, no request, no HTTP parser. A dropped viewer
reconnects and catches up from the store (``Last-Event-ID``).

With several instances sharing a PostgreSQL store, each also hears of the others' tallies
(:mod:`bot.web.feed`) and calls :meth:`accepted` with them; a seq already posted is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from bot.errors import RequestError, StoreError

log = logging.getLogger(__name__)

MAX_BUFFERED = 256 * 1024
"""Bytes a viewer may leave unread before it is dropped (about a hundred events)."""
SLICE_SECONDS = 0.002
"""How long writing to viewers may hold the event loop before everything else (chat
deliveries above all, whose every store round trip waits for it) gets a turn."""
CHECK_EVERY = 64
"""Viewers written to between looks at the clock."""
PING = b": ping\n\n"
LAST_CHUNK = b"0\r\n\r\n"
"""The end of a chunked body: the stream ends in good order (the page reconnects)."""


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of an HTTP/1.1 chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


@dataclass(frozen=True, slots=True)
class Limits:
    per_ip: int = 16
    total: int = 20_000
    lifetime: float = 30 * 60.0
    """Seconds a stream stays open before it is closed (the page reconnects and catches up)."""
    write_timeout: float = 10.0
    """Seconds a viewer's unread bytes may sit without moving before it is dropped."""


class Connection(Protocol):
    """What a viewer is written to: its asyncio transport."""

    def write(self, data: bytes) -> None: ...
    def get_write_buffer_size(self) -> int: ...
    def is_closing(self) -> bool: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


@dataclass(eq=False, slots=True)
class Viewer(asyncio.Protocol):
    """One open stream; once caught up, also the protocol of its connection: what the viewer
    sends is dropped (it has nothing more to say), and its leaving is noticed at once."""

    broadcaster: Broadcaster
    count_id: str
    ip: str
    since: float
    connection: Connection
    chunked: bool
    """HTTP/1.1: each event goes as one chunk; HTTP/1.0: as it is, to the end of the body."""
    sent: int = 0
    """The last seq written (or caught up on)."""
    ready: bool = False
    """Caught up: events are written as they come; until then they wait in ``held``."""
    held: list[tuple[int, bytes]] = field(default_factory=list)
    stalled: tuple[float, int] | None = None
    """Since when its unread bytes have not moved, and how many there were."""
    closed: bool = False

    def send(self, seq: int, data: bytes, framed: bytes) -> None:
        """Write an event (``framed``: as a chunk) now, or hold it until caught up."""
        if not self.ready:
            self.held.append((seq, data))
            return
        if seq and seq <= self.sent:
            return
        self.connection.write(framed if self.chunked else data)
        self.sent = max(self.sent, seq)

    def catch_up(self) -> None:
        """Write what was held while catching up (what it has not had), and go live."""
        self.ready = True
        held, self.held = self.held, []
        for seq, data in held:
            self.send(seq, data, chunk(data))

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool:
        return False  # the viewer is done: the connection closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.broadcaster.leave(self)


EventFor = Callable[[str, int], Awaitable[bytes | None]]
"""The encoded event of a count's accepted tally (count id, seq); None: not to be shown."""


class Broadcaster:
    """The open streams of every count, and the task that posts accepted tallies to them."""

    def __init__(self, event_for: EventFor, limits: Limits = Limits()) -> None:
        self.event_for = event_for
        self.limits = limits
        self.channels: dict[str, set[Viewer]] = {}
        self._per_ip: Counter[str] = Counter()
        self.viewers = 0
        self.dropped = 0
        """Viewers dropped for not reading, since the start."""
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
        except asyncio.QueueFull:  # tallies faster than they can be worded: the viewers
            self._drop(list(self.channels[count_id]))  # reconnect and catch up from the store

    async def run(self) -> None:
        """Post every accepted tally to its count's viewers, in order; runs until cancelled."""
        while True:
            count_id, seq = await self._pending.get()
            if count_id not in self.channels or seq <= self.latest.get(count_id, 0):
                self.latest[count_id] = max(seq, self.latest.get(count_id, 0))
                continue
            try:
                data = await self.event_for(count_id, seq)
            except (StoreError, RequestError) as exc:
                log.warning("live update of %s #%d not sent: %s", count_id, seq, exc)
                self._drop(list(self.channels.get(count_id, ())))  # they catch up on return
                continue
            self.latest[count_id] = seq
            if data is not None:
                await self.post(count_id, seq, data)

    async def post(self, count_id: str, seq: int, data: bytes) -> None:
        """Write one event to every viewer of ``count_id``, a slice at a time."""
        framed = chunk(data)
        viewers = list(self.channels.get(count_id, ()))
        loop = asyncio.get_running_loop()
        until = loop.time() + SLICE_SECONDS
        slow = []
        for i, viewer in enumerate(viewers):
            connection = viewer.connection
            if viewer.closed or connection.is_closing():
                continue
            if connection.get_write_buffer_size() > MAX_BUFFERED:
                slow.append(viewer)
                continue
            viewer.send(seq, data, framed)
            if i % CHECK_EVERY == 0 and loop.time() > until:
                await asyncio.sleep(0)  # chat deliveries and everything else get a turn
                until = loop.time() + SLICE_SECONDS
        self._drop(slow)

    def unsure(self) -> None:
        """Tallies may have been missed (no notices for a while): forget the last seq of every
        count nobody watches, so that its next viewer catches up from the store."""
        for count_id in [c for c in self.latest if c not in self.channels]:
            del self.latest[count_id]

    async def ping(self) -> None:
        """A comment to every stream, so that proxies and browsers keep idle ones open."""
        for count_id in list(self.channels):
            await self.post(count_id, 0, PING)

    # -- the viewers' side -----------------------------------------------------------------

    def join(
        self,
        count_id: str,
        ip: str,
        *,
        now: float,
        connection: Connection,
        chunked: bool = True,
    ) -> Viewer:
        """A new viewer of ``count_id``, holding its events until it has caught up
        (:meth:`Viewer.catch_up`); RequestError 429 or 503 past the limits."""
        if self._per_ip[ip] >= self.limits.per_ip:
            raise RequestError(
                f"at most {self.limits.per_ip} live streams from one address", status=429
            )
        if self.viewers >= self.limits.total:
            raise RequestError("too many live streams open; try again shortly", status=503)
        viewer = Viewer(self, count_id, ip, now, connection, chunked)
        self.channels.setdefault(count_id, set()).add(viewer)
        self._per_ip[ip] += 1
        self.viewers += 1
        self._moved()
        return viewer

    def leave(self, viewer: Viewer) -> None:
        """The viewer's stream ends in good order (the end of the body, then the connection
        closes), or it has left."""
        if self._forget(viewer):
            connection = viewer.connection
            if not connection.is_closing():
                if viewer.chunked:
                    connection.write(LAST_CHUNK)
                connection.close()

    def _forget(self, viewer: Viewer) -> bool:
        """The viewer is gone from the channels (False: it was already)."""
        if viewer.closed:
            return False
        viewer.closed = True
        self.viewers -= 1
        self._per_ip[viewer.ip] -= 1
        if self._per_ip[viewer.ip] <= 0:
            del self._per_ip[viewer.ip]
        viewers = self.channels.get(viewer.count_id)
        if viewers is not None:
            viewers.discard(viewer)
            if not viewers:
                del self.channels[viewer.count_id]
        self._moved()
        return True

    def sweep(self, now: float) -> int:
        """Drop the viewers whose unread bytes have not moved for ``write_timeout`` (their
        connections aborted) and end the streams past their lifetime (in good order: the page
        reconnects); how many."""
        slow: list[Viewer] = []
        old: list[Viewer] = []
        for viewers in self.channels.values():
            for viewer in viewers:
                unread = viewer.connection.get_write_buffer_size()
                if unread == 0:
                    viewer.stalled = None
                elif viewer.stalled is None or viewer.stalled[1] != unread:
                    viewer.stalled = (now, unread)
                elif now - viewer.stalled[0] > self.limits.write_timeout:
                    slow.append(viewer)
                    continue
                if now - viewer.since > self.limits.lifetime:
                    old.append(viewer)
        self._drop(slow)
        for viewer in old:
            self.leave(viewer)
        return len(slow) + len(old)

    def close(self) -> None:
        """End every stream in good order (the server is stopping; the pages reconnect)."""
        for viewers in list(self.channels.values()):
            for viewer in list(viewers):
                self.leave(viewer)

    async def until(self, test: Callable[[], bool]) -> None:
        """Wait until ``test()`` holds, checked whenever a viewer joins or leaves."""
        while not test():
            moved = asyncio.get_running_loop().create_future()
            self._watchers.add(moved)
            try:
                await moved
            finally:
                self._watchers.discard(moved)

    def per_ip(self, ip: str) -> int:
        return self._per_ip[ip]

    def _drop(self, viewers: list[Viewer]) -> None:
        for viewer in viewers:
            if self._forget(viewer):
                self.dropped += 1
            viewer.connection.abort()

    def _moved(self) -> None:
        for watcher in self._watchers:
            if not watcher.done():
                watcher.set_result(None)
