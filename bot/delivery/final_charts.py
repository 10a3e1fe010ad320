"""The chart that goes with a count's final message, drawn once for every channel it goes to.

For a POST of a final ``Message`` the chart of the count's history up to that update is drawn
(through the ``ChartCache`` shared with the commands, so N channels cost one render) and handed
to ``Adapter.post`` as an attachment. Drawing happens before the delivery takes its rate slot.
A chart that cannot be drawn (an error, or longer than ``timeout``) is left out and the log
says why: the final message itself always goes.

On a platform that shows a chart with requests of its own after the message
(``Adapter.charts_apart``: Slack uploads it into the message's thread), the chart is a step of
its own: the post is recorded SENT as soon as it is out, and in the same transaction a
``DeliveryAction.CHART`` delivery is queued (:func:`chart_step`) that shows the chart with that
message. It is claimed, noted, confirmed and retried like any delivery, so a message never
waits for its chart, a kill while charts go out leaves at most the charts on their way in
doubt, and the chart is shown exactly once. A final posted into a subscription's thread
(``DeliveryAction.REPLY``) gets its step the same way; the step knows the thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from cachetools import LRUCache

from bot.charts.chart import CHART_TALLIES, ChartCache, chart_attachment
from bot.delivery.attempt import message_of
from bot.domain.message import Attachment, Message, Outgoing
from bot.domain.subscription import ChannelRef
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import Delivery, DeliveryAction, NewDelivery

CHART_TIMEOUT_S = 30.0
"""How long a final message waits for its chart to be drawn before it goes without it."""
KEPT = 8
"""How many finals' drawings are kept (the last few)."""

log = logging.getLogger("bot.delivery.worker")
_Drawing = asyncio.Task[Attachment | None]


@dataclass(frozen=True, slots=True)
class ChartStep:
    """What a ``CHART`` delivery shows: ``message``'s chart, with its post ``on`` (the message
    id), which carries the key ``key`` (where ``find_posted`` finds it again); ``thread``: the
    thread the post went into (a subscription's ``thread``), None: the channel itself."""

    message: Message
    on: str
    key: str
    thread: str | None = None

    @classmethod
    def of(cls, d: Delivery) -> ChartStep:
        return _step(d.payload)

    def place(self, d: Delivery) -> ChannelRef:
        """Where the post of the step ``d`` is: its channel, or the thread it went into."""
        return replace(d.channel, thread=self.thread)


@lru_cache(maxsize=64)
def _step(payload: str) -> ChartStep:
    """:meth:`ChartStep.of` by the step's payload: read once, though a delivery of it asks
    several times (what it shows, where, its key), and the message it carries once for the
    fan-out's steps (``message_of``). A ``ChartStep`` is immutable."""
    raw = json.loads(payload)
    thread = raw.get("thread")
    return ChartStep(
        message_of(raw["message"]),
        str(raw["on"]),
        str(raw["key"]),
        None if thread is None else str(thread),
    )


def chart_step(
    post: Delivery, message_id: str, key: str, at: datetime, *, thread: str | None = None
) -> NewDelivery:
    """The ``CHART`` delivery that shows the chart of ``post`` (a final, posted as
    ``message_id`` with ``key``, into the thread ``thread`` if it went into one), queued at
    ``at``."""
    payload = json.dumps(
        {"message": post.payload, "on": message_id, "key": key}
        | ({} if thread is None else {"thread": thread})
    )
    return NewDelivery(
        subscription_id=post.subscription_id,
        channel=post.channel,
        count_id=post.count_id,
        tally_seq=post.tally_seq,
        action=DeliveryAction.CHART,
        significant=True,
        payload=payload,
        created_at=at,
    )


class FinalCharts:
    def __init__(
        self, db: Database, charts: ChartCache | None, *, timeout: float = CHART_TIMEOUT_S
    ) -> None:
        """``charts``: where the charts are drawn and kept (the cache the ``chart`` command
        uses too); without one, final messages go without a chart."""
        self.db = db
        self.charts = charts
        self.timeout = timeout
        self._drawing: LRUCache[tuple[str, int | None], _Drawing] = LRUCache(KEPT)

    def wanted(self, d: Delivery, content: Outgoing) -> bool:
        """Whether a chart goes with ``d``: a post (or its chart step) of a final message."""
        return (
            self.charts is not None
            and d.action in (DeliveryAction.POST, DeliveryAction.REPLY, DeliveryAction.CHART)
            and isinstance(content, Message)
            and content.final
        )

    async def for_delivery(
        self, d: Delivery, content: Outgoing, where: dict[str, object]
    ) -> Attachment | None:
        """The chart that goes with ``d``: for a post of a final message, else None."""
        if not self.wanted(d, content):
            return None
        key = (d.count_id, d.tally_seq)
        task = self._drawing.get(key)
        if task is None or task.cancelled():
            task = asyncio.create_task(self._draw(d, where), name=f"chart {key}")
            self._drawing[key] = task
        return await task  # no shield: shutting down cancels the drawing with the senders

    async def _draw(self, d: Delivery, where: dict[str, object]) -> Attachment | None:
        assert self.charts is not None
        try:
            async with self.db.connect() as conn:
                count = await count_rows.get(conn, d.count_id)
                history = await tally_rows.history(
                    conn, d.count_id, limit=CHART_TALLIES, through=d.tally_seq
                )
            if count is None:
                raise LookupError(f"count {d.count_id!r} is not in the store")
            async with asyncio.timeout(self.timeout):
                return await chart_attachment(count, history, cache=self.charts)
        except TimeoutError:
            log.warning(
                "the final message goes without its chart: not drawn within %g s",
                self.timeout,
                extra=where,
            )
        except Exception as exc:
            log.warning(
                "the final message goes without its chart: %s: %s", type(exc).__name__, exc,
                exc_info=exc, extra=where,
            )  # fmt: skip
        return None
