"""An in-memory tally source for tests of pollers and everything downstream."""

from __future__ import annotations

from collections import deque

from bot.base.lifecycle import Closing
from bot.domain.model import Tally
from bot.errors import SourceError


class FakeSource(Closing):
    """An in-memory :class:`~bot.ingest.sources.base.Source` for tests of pollers and everything
    downstream.

    Outcomes are queued and handed out one per :meth:`fetch`, in order: :meth:`set` queues a
    tally, :meth:`fail` queues an error. With nothing queued, ``fetch`` returns None ("not
    modified"). ``fetches`` counts calls, ``entered``/``exited`` count the lifecycle, and
    ``fetch`` outside ``async with`` raises RuntimeError, so a poller that forgets the
    lifecycle fails its tests. :meth:`forget` puts the tally handed out last back at the head
    of the queue, as a real source reads its unchanged document again; ``forgets`` counts it.
    """

    def __init__(self, name: str = "fake", *, polled: bool = True) -> None:
        self.name = name
        self.polled = polled
        self.fetches = 0
        self.entered = 0
        self.exited = 0
        self.forgets = 0
        self._last: Tally | None = None
        self._queue: deque[Tally | SourceError] = deque()
        self._open = False

    def set(self, tally: Tally) -> None:
        """Queue ``tally`` to be returned by a coming fetch."""
        self._queue.append(tally)

    def fail(self, exc: SourceError, *, times: int = 1) -> None:
        """Queue ``exc`` to be raised by the next ``times`` fetches (after what is queued)."""
        if times < 1:
            raise ValueError(f"times must be >= 1, got {times}")
        self._queue.extend([exc] * times)

    @property
    def pending(self) -> int:
        """How many queued outcomes are still to be handed out."""
        return len(self._queue)

    async def aopen(self) -> None:
        """Mark the fake open."""
        if self._open:
            raise RuntimeError(f"source {self.name!r} is already open")
        self._open = True
        self.entered += 1

    async def aclose(self) -> None:
        """Mark the fake closed."""
        self._open = False
        self.exited += 1

    async def fetch(self) -> Tally | None:
        """Hand out the next queued outcome; None when the queue is empty."""
        if not self._open:
            raise RuntimeError(f"source {self.name!r}: fetch() outside 'async with'")
        self.fetches += 1
        if not self._queue:
            return None
        outcome = self._queue.popleft()
        if isinstance(outcome, SourceError):
            raise outcome
        self._last = outcome
        return outcome

    def forget(self) -> None:
        """Hand out the tally returned last again, before anything else queued."""
        self.forgets += 1
        if self._last is not None:
            self._queue.appendleft(self._last)
            self._last = None
