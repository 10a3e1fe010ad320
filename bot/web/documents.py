"""A public count's feed and JSON document, made once per accepted tally.

Each is keyed by the count (as read: an edit of its title makes them anew) and the seq of its
latest accepted tally, read from the store at each request (one small read, shared by a crowd
asking at once): the same bytes until the next accepted tally, and a strong ``ETag`` from them.
A crowd asking at a new tally shares one making, and the feed is made in slices of the event
loop (judging a few hundred updates takes a while), so chat deliveries never wait for it.
Nothing in either changes between tallies (no "last checked" time: the page says that), so
every instance serves the same bytes.

The feed lists the significant updates (:func:`significant`) among the latest
:data:`~bot.charts.chart.CHART_TALLIES` accepted tallies, newest first, at most
:data:`FEED_ENTRIES`; each entry is the update's headline as it was published and its figures and
sentences as the console says them (:func:`bot.domain.render_text.render`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bot.domain import format as fmt
from bot.domain import render_text
from bot.domain.detect import Accepted, detect
from bot.domain.model import Count, Tally, TallyState
from bot.web import atom, standing
from bot.web.broadcast import SLICE_SECONDS
from bot.web.events import Counts
from bot.web.view import HISTORY, STATE_OF_TALLY, STATE_WORDS, View, entry

FEED_ENTRIES = HISTORY
"""The most entries a feed carries (the latest significant updates): as many as the page lists."""
NO_UPDATE = datetime(1970, 1, 1, tzinfo=UTC)
"""The feed's ``updated`` before any figure (RFC 4287 requires one; no update has been made)."""


@dataclass(frozen=True, slots=True)
class Document:
    body: bytes
    etag: str
    """Strong, quoted: a hash of ``body``."""

    @classmethod
    def of(cls, body: bytes) -> Document:
        return cls(body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


def significant(count: Count, previous: Tally | None, tally: Tally) -> bool:
    """Whether an update is news: the first figures, a final, or what detection calls
    significant (a lead change, a call, a pause...); an update its count's rules, edited since,
    no longer accept is kept (it was published)."""
    if previous is None or tally.state is TallyState.FINAL:
        return True
    found = detect(count, previous, tally)
    return not isinstance(found, Accepted) or found.significant


def published(count: Count, tally: Tally, previous: Tally | None) -> str:
    """The update's headline as it was published (the page's history entry's)."""
    return entry(count, tally, previous).headline


class Documents:
    """The feeds and JSON documents of the public counts, by count and latest seq."""

    def __init__(self, counts: Counts, *, cache: int = 256) -> None:
        self.counts = counts
        self._made: OrderedDict[tuple[str, str], tuple[Count, int, Document]] = OrderedDict()
        self._cache = cache
        self._making: dict[tuple[str, str, int], asyncio.Task[Document]] = {}

    async def feed(self, count_id: str, page_url: str) -> Document | None:
        """The Atom feed; None: no such public count."""
        return await self._get("atom", count_id, page_url)

    async def standing(self, count_id: str, page_url: str) -> Document | None:
        """The JSON document; None: no such public count."""
        return await self._get("json", count_id, page_url)

    async def _get(self, kind: str, count_id: str, page_url: str) -> Document | None:
        count = await self.counts.visible(count_id)
        if count is None:
            return None
        seq = await self.counts.latest_shared(count_id)
        found = self._made.get((kind, count_id))
        if found is not None and found[0] == count and found[1] == seq:
            self._made.move_to_end((kind, count_id))
            return found[2]
        key = (kind, count_id, seq)
        task = self._making.get(key)
        if task is None:  # a crowd asking at a new tally shares one making
            task = self._making[key] = asyncio.ensure_future(self._make(kind, count, seq, page_url))
            task.add_done_callback(lambda _done: self._making.pop(key, None))
        made: Document = await asyncio.shield(task)  # one asker leaving does not stop it
        return made

    async def settle(self) -> None:
        """Let the makings under way finish (the server is stopping, before the store closes)."""
        await asyncio.gather(*self._making.values(), return_exceptions=True)

    async def _make(self, kind: str, count: Count, seq: int, page_url: str) -> Document:
        history = await self.counts.history(count.id, through=seq or None)
        if kind == "atom":
            made = Document.of(await self._atom(count, history, page_url))
        else:
            made = Document.of(self._json(count, history, page_url))
        self._made[(kind, count.id)] = (count, history[-1].seq if history else 0, made)
        self._made.move_to_end((kind, count.id))
        while len(self._made) > self._cache:
            self._made.popitem(last=False)
        return made

    def _json(self, count: Count, history: Sequence[Tally], page_url: str) -> bytes:
        v: View = self.counts.view(count, history)
        if not history:
            doc = standing.before_figures(
                count.id,
                count.title,
                state=v.state,
                state_text=v.state_text,
                headline=v.headline,
                url=page_url,
            )
            return standing.encode(doc)
        last = history[-1]
        before = history[-2] if len(history) > 1 else None
        message = replace(fmt.for_status(count, last), headline=published(count, last, before))
        doc = standing.document(
            message,
            state=v.state,
            state_text=v.state_text,
            updated=last.observed_at,
            url=page_url,
        )
        return standing.encode(doc)

    async def _atom(self, count: Count, history: Sequence[Tally], page_url: str) -> bytes:
        """The feed; judging hundreds of updates takes a while: in slices, so that chat
        deliveries and everything else get a turn."""
        entries: list[atom.FeedEntry] = []
        loop = asyncio.get_running_loop()
        until = loop.time() + SLICE_SECONDS
        for i in reversed(range(len(history))):
            if loop.time() > until:
                await asyncio.sleep(0)
                until = loop.time() + SLICE_SECONDS
            tally = history[i]
            if i == 0 and tally.seq > 1:
                break  # the oldest read of a long count: the update before it was not read
            before = history[i - 1] if i else None
            if not significant(count, before, tally):
                continue
            headline = published(count, tally, before)
            message = replace(fmt.for_status(count, tally), headline=headline)
            entries.append(
                atom.FeedEntry(tally.seq, headline, render_text.render(message), tally.observed_at)
            )
            if len(entries) == FEED_ENTRIES:
                break
        state = STATE_OF_TALLY[history[-1].state] if history else count.status
        return atom.render(
            title=count.title,
            subtitle=f"{STATE_WORDS[state]}: every significant update, newest first",
            page_url=page_url,
            updated=history[-1].observed_at if history else NO_UPDATE,
            entries=entries,
        )
