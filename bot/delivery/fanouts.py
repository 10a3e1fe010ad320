"""Fan-outs as the logs tell them: what became of the deliveries of one update on one platform
(sent, edited, given up, cancelled, superseded, retried, rate limited), and one info line per
fan-out once nothing of it is left to send (logger ``bot.delivery.worker.fanout``)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from bot.base.clock import Clock
from bot.domain.subscription import Platform
from bot.store import Database, outbox
from bot.store.outbox import Delivery, DeliveryAction

summary = logging.getLogger("bot.delivery.worker.fanout")
"""One line per finished fan-out (the per-delivery lines are debug)."""


@dataclass
class Fanout:
    """What became of the deliveries of one update on one platform, for its summary line."""

    started: float
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Fanouts:
    """The fan-outs under way, by platform, count and update."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self._fanouts: dict[tuple[Platform, str, int | None], Fanout] = {}

    def of(self, d: Delivery) -> Fanout | None:
        """The fan-out ``d`` belongs to (None for an alert to admins: not part of one)."""
        if d.action is DeliveryAction.ALERT:
            return None
        key = (d.channel.platform, d.count_id, d.tally_seq)
        fanout = self._fanouts.get(key)
        if fanout is None:
            fanout = self._fanouts[key] = Fanout(self.clock.monotonic())
        return fanout

    def outcome(self, d: Delivery, what: str) -> None:
        fanout = self.of(d)
        if fanout is not None:
            fanout.outcomes[what] += 1

    async def summarise(self, platform: Platform) -> None:
        """One info line for each fan-out on ``platform`` that has nothing left to send."""
        if not any(k[0] == platform for k in self._fanouts):
            return
        async with self.db.connect() as conn:
            still = await outbox.open_updates(conn, platform)
        for key in [k for k in self._fanouts if k[0] == platform and k[1:] not in still]:
            fanout = self._fanouts.pop(key)
            _, count_id, seq = key
            o = fanout.outcomes
            took = self.clock.monotonic() - fanout.started
            summary.info(
                "fan-out of %s update #%s to %s done in %.1f s: %d sent, %d edited, %d gave up, "
                "%d cancelled, %d superseded; %d retries, %d rate limited",
                count_id, seq, platform, took, o["sent"], o["edited"], o["dead"],
                o["cancelled"], o["superseded"], o["retried"], o["rate_limited"],
                extra={"count": count_id, "platform": platform},
            )  # fmt: skip
