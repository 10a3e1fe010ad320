"""The tally source contract, and an in-memory fake of it for tests.

A source is used as an async context manager (which opens and closes whatever it holds, such as
an HTTP session) and asked for the current tally with :meth:`Source.fetch`::

    async with build_source(count, cfg, clock=clock, base_dir=base, where=where) as source:
        tally = await source.fetch()   # None: nothing new since the last fetch

``fetch`` raises :class:`~bot.errors.TransientSourceError` for failures worth retrying
(timeouts, connection errors, HTTP 5xx, 408 and 429) and :class:`~bot.errors.PermanentSourceError`
for failures that need someone to fix something (other HTTP 4xx, a body that does not parse, a
mapping that does not match the document). Messages name the field, column or path at fault.

A returned :class:`~bot.domain.model.Tally` has the count's id, a vote figure for every choice,
``void`` and ``challenged`` (0 when not mapped), ``received`` (None when not mapped), ``state``,
``observed_at`` from the injected clock, ``source`` set to the source's name and ``seq`` 0.
Sources do not compare a tally with earlier accepted ones: a separate detector does that.

A source remembers what it returned, to answer None next time (an ETag, a file's size and
time, a body's digest, a replay's position); :meth:`Source.forget` drops that memory when the
tally it returned was not stored, so it is read again rather than lost.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from bot.domain.model import Tally


@runtime_checkable
class Source(Protocol):
    """Where a count's tallies come from (a JSON feed, a published sheet, a file, a replay...)."""

    @property
    def name(self) -> str:
        """Short name that goes into :attr:`Tally.source`, e.g. ``"nlrb-feed"``."""
        ...

    @property
    def polled(self) -> bool:
        """Whether a poller should call :meth:`fetch` (False for manual entry)."""
        ...

    async def __aenter__(self) -> Self:
        """Open what the source holds (an HTTP session, a file...)."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close what :meth:`__aenter__` opened."""
        ...

    async def fetch(self) -> Tally | None:
        """The current tally, or None when nothing changed since the last fetch."""
        ...

    def forget(self) -> None:
        """Forget what the last fetch remembered (validators, body digest, figures, position),
        so that the next fetch reads the source again and returns its tally even if nothing
        changed. The poller calls it when the tally it was handed could not be stored: without
        it, a feed answering 304 (or the same body) would hide that tally for ever."""
        ...
