"""A count's page as data: what the page and its live events show, read from the store.

:class:`Counts` reads a count only when the public lookup allows it (otherwise it is "not
found", like a count that does not exist), words it with :mod:`bot.web.view`, and encodes each
accepted tally as one Server-Sent Event: ``id`` its ``seq`` (so a browser that reconnects says
where it got to, in ``Last-Event-ID``), ``event: tally``, and the page's view as JSON. Events
are kept by count and seq, so the viewers catching up after a restart share the work.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from bot.base.clock import Clock, SystemClock
from bot.charts.chart import CHART_TALLIES
from bot.domain.model import SLUG, Count, CountStatus, Tally
from bot.domain.schedule import note as schedule_note
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows
from bot.web.public import PublicCounts
from bot.web.view import HISTORY, Entry, Health, Segment, View, entry, segments, view

T = TypeVar("T")
VISIBLE_SECONDS = 2.0
"""How long whether a count is public (and the count itself) is remembered."""
CATCH_UP = HISTORY
"""The most missed updates sent to a viewer that reconnects (the page lists no more)."""


def chart_path(count_id: str, seq: int, ext: str = "svg", *, narrow: bool = False) -> str:
    """The address of the chart after update ``seq``; ``narrow``: the phone's (SVG only)."""
    return f"/c/{count_id}/chart-{seq}{'-narrow' if narrow else ''}.{ext}"


def encode(v: View) -> bytes:
    """The view as one Server-Sent Event."""
    return f"id: {v.seq}\nevent: tally\ndata: {v.to_json()}\n\n".encode()


@dataclass(frozen=True, slots=True)
class Page:
    """What ``GET /c/<id>`` shows."""

    count: Count
    view: View
    history: tuple[Entry, ...]
    """Newest first."""
    ahead: tuple[Segment, ...] = ()
    """When the count starts or resumes, while that is ahead (``bot.domain.schedule.note``);
    shown as the page is loaded, in the browser's zone."""


class Counts:
    """The public counts, read from the store through the public lookup."""

    def __init__(
        self,
        db: Database,
        public: PublicCounts,
        health: Health,
        *,
        cache: int = 256,
        clock: Clock | None = None,
    ) -> None:
        self.db = db
        self.clock = clock or SystemClock()
        self.public = public
        self.health = health
        self._events: OrderedDict[tuple[str, int], tuple[Count, bytes]] = OrderedDict()
        self._entries: OrderedDict[tuple[str, int], tuple[Count, Entry]] = OrderedDict()
        self._cache = cache
        self._visible: dict[str, tuple[float, Count | None]] = {}
        self._reading: dict[tuple[str, int | None], asyncio.Task[Any]] = {}
        """Reads under way, by count id and seq (-1: the count, -2: its latest seq): a crowd
        asking at once (reconnecting after a restart) shares one."""

    async def visible(self, count_id: str) -> Count | None:
        """The count if it is public, else None (StoreError: the store failed). Remembered for
        :data:`VISIBLE_SECONDS`, so that a crowd reconnecting at once costs the store one read."""
        if not SLUG.fullmatch(count_id):
            return None
        now = asyncio.get_running_loop().time()
        known = self._visible.get(count_id)
        if known is not None and now - known[0] < VISIBLE_SECONDS:
            return known[1]
        count: Count | None = await self._shared((count_id, -1), lambda: self._read(count_id))
        if len(self._visible) >= self._cache:
            self._visible.clear()
        self._visible[count_id] = (now, count)
        return count

    async def _read(self, count_id: str) -> Count | None:
        if not await self.public.is_public(count_id):
            return None
        async with self.db.connect() as conn:
            return await count_rows.get(conn, count_id)

    async def _shared(self, key: tuple[str, int | None], read: Callable[[], Awaitable[T]]) -> T:
        task = self._reading.get(key)
        if task is None:
            task = self._reading[key] = asyncio.ensure_future(read())
            task.add_done_callback(lambda _done: self._reading.pop(key, None))
        found: T = await asyncio.shield(task)  # one asker leaving does not stop it for the rest
        return found

    async def settle(self) -> None:
        """Let the reads under way finish (the server is stopping, before the store closes: a
        read cut off mid-query would leave its connection to the store behind)."""
        await asyncio.gather(*self._reading.values(), return_exceptions=True)

    def forget(self, count_id: str) -> None:
        """Read the count afresh next time (a tally changed its state)."""
        self._visible.pop(count_id, None)

    async def history(self, count_id: str, *, through: int | None = None) -> list[Tally]:
        """The count's latest accepted tallies (through ``through``), oldest first."""

        async def read() -> list[Tally]:
            async with self.db.connect() as conn:
                return await tally_rows.history(
                    conn, count_id, limit=CHART_TALLIES, through=through
                )

        rows: list[Tally] = await self._shared((count_id, through), read)
        return rows

    async def latest(self, count_id: str) -> int:
        """The seq of the count's latest accepted tally (0: none yet), read now."""
        async with self.db.connect() as conn:
            last = await tally_rows.last(conn, count_id)
        return 0 if last is None else last.seq

    async def latest_shared(self, count_id: str) -> int:
        """:meth:`latest`, one read shared by everyone asking at once."""
        seq: int = await self._shared((count_id, -2), lambda: self.latest(count_id))
        return seq

    def view(self, count: Count, history: Sequence[Tally]) -> View:
        return view(
            count,
            history,
            self.health(count.id),
            chart_url=lambda seq: chart_path(count.id, seq),
            narrow_url=lambda seq: chart_path(count.id, seq, narrow=True),
        )

    async def page(self, count_id: str) -> Page | None:
        """The page of a public count; None: no such public count."""
        count = await self.visible(count_id)
        if count is None:
            return None
        history = await self.history(count_id)
        shown = range(max(len(history) - HISTORY, 0), len(history))
        entries = tuple(
            self._entry(count, history[i], history[i - 1] if i else None) for i in reversed(shown)
        )
        async with self.db.connect() as conn:
            scheduled = await schedule_rows.get(conn, count_id)
        said = None if scheduled is None else schedule_note(scheduled, self.clock.now())
        ahead = () if said is None or count.status is CountStatus.FINAL else segments(said)
        return Page(count, self.view(count, history), entries, ahead)

    async def event(self, count_id: str, seq: int) -> bytes | None:
        """The event of update ``seq``; None if the count is not public (or the seq unknown)."""
        self.forget(count_id)  # its status or ballots received may have changed with it
        count = await self.visible(count_id)
        if count is None:
            return None
        cached = self._cached(count, seq)
        if cached is not None:
            return cached
        history = await self.history(count_id, through=seq)
        if not history or history[-1].seq != seq:
            return None
        return self._encoded(count, history)

    async def missed(self, count_id: str, last: int) -> list[tuple[int, bytes]]:
        """The events after ``last``, oldest first (at most the latest :data:`CATCH_UP`)."""
        count = await self.visible(count_id)
        if count is None:
            return []
        history = await self.history(count_id)
        out: list[tuple[int, bytes]] = []
        start = max(len(history) - CATCH_UP, 0)
        for i in range(start, len(history)):
            seq = history[i].seq
            if seq > last:
                out.append(
                    (seq, self._cached(count, seq) or self._encoded(count, history[: i + 1]))
                )
        return out

    def _cached(self, count: Count, seq: int) -> bytes | None:
        found = self._events.get((count.id, seq))
        return found[1] if found is not None and found[0] == count else None

    def _encoded(self, count: Count, history: Sequence[Tally]) -> bytes:
        data = encode(self.view(count, history))
        key = (count.id, history[-1].seq)
        self._events[key] = (count, data)
        self._events.move_to_end(key)
        while len(self._events) > self._cache:
            self._events.popitem(last=False)
        return data

    def _entry(self, count: Count, tally: Tally, previous: Tally | None) -> Entry:
        key = (count.id, tally.seq)
        found = self._entries.get(key)
        if found is not None and found[0] == count:
            return found[1]
        made = entry(count, tally, previous)
        self._entries[key] = (count, made)
        while len(self._entries) > self._cache * 4:
            self._entries.popitem(last=False)
        return made
