"""Rehearsals: a clearly marked test message in every channel subscribed to a count, posted the
way a count's updates are (each adapter's ``post``, paced by its platform's pacer), to learn
the day before a count which channels the bot cannot post in, and why.

The test message is a message like an update (an embed on Discord, blocks on Slack) that says
"Rehearsal — not a result" and carries no figures. What failed is told with the adapter's own
words for it (``PermanentDeliveryError`` and its ``fix``). The messages posted are deleted again
``KEEP_S`` after (on the injected clock's ``sleep``), unless the admin asked to keep them. The
deletion is best-effort: it is not in the store, so a bot that stops within that minute leaves
the messages (an admin deletes them by hand), and a channel that refuses the deletion keeps its
message (logged).

A rehearsal's requests take no shared turn of the platform's rate budget (like a command's
reply, ``bot.delivery.replies``): any instance rehearses the commands it receives; they wait for
their slots under the platform's limits like any delivery, behind none and ahead of none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bot.base.clock import Clock, Sleep
from bot.delivery.adapter import Adapter
from bot.delivery.pacing import Pace, Pacer, Route, unpaced
from bot.domain.message import Message, Significance, Timed
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import CommandError, DeliveryError, PermanentDeliveryError, RateLimited

log = logging.getLogger(__name__)

KEEP_S = 60.0
"""How long a rehearsal's messages stay before they are deleted again."""
TRIES = 3
"""Posts of one channel's test message at most, each 429 waited out."""
SHOWN_FAILURES = 20
"""Failed channels the reply lists one by one (the rest are counted)."""
MARK = "Rehearsal — not a result"
"""What every rehearsal message says first (its headline)."""


def rehearsal_message(count_id: str, title: str) -> Message:
    """The test message for ``count_id``: marked, no figures, no ping."""
    return Message(
        count_id=count_id,
        title=f"{MARK}: {title}",
        seq=0,
        headline=f"{MARK}. tallybot is checking that it can post here before the count.",
        choices=(),
        lines=("This is a test message from the count's admins; no votes are shown.",),
        footer=Timed.of(MARK),
        significance=Significance.ROUTINE,
        events=(),
        leader=None,
        winner=None,
        final=False,
    )


@dataclass(frozen=True, slots=True)
class Failed:
    channel: ChannelRef
    why: str
    fix: str | None = None

    def __str__(self) -> str:
        said = self.fix is not None and self.fix.lower()[:40] in self.why.lower()
        fix = f" ({self.fix.rstrip('.')})" if self.fix and not said else ""
        return f"{self.channel}: {self.why}{fix}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a rehearsal found: where it posted (channel, message id) and where it failed."""

    posted: tuple[tuple[ChannelRef, str], ...]
    failed: tuple[Failed, ...]
    kept: bool

    def summary(self, count_id: str) -> str:
        total = len(self.posted) + len(self.failed)
        if total == 0:
            return f"No channel is subscribed to {count_id}: nothing to rehearse."
        head = f"Rehearsal of {count_id} posted to {len(self.posted)} of {total} channels"
        if self.posted:
            head += " (kept)" if self.kept else f" (deleted again in {KEEP_S:g} s, best-effort)"
        if not self.failed:
            return head + "; none failed."
        shown = [f"- {f}" for f in self.failed[:SHOWN_FAILURES]]
        if len(self.failed) > SHOWN_FAILURES:
            shown.append(
                f"- and {len(self.failed) - SHOWN_FAILURES} more (the log lists every one)"
            )
        return head + f"; {len(self.failed)} failed:\n" + "\n".join(shown)


def paced(pacer: Pacer | None) -> Pace:
    """The ``Pace`` of a rehearsal's requests: the platform's slots, a 429 holding the route's
    buckets as for a delivery; no shared turn (see the module docstring)."""
    if pacer is None:
        return unpaced

    @asynccontextmanager
    async def pace(route: Route, *, delivers: bool = False) -> AsyncIterator[None]:
        async with pacer.slot(route):
            try:
                yield
            except RateLimited as exc:
                pacer.hold(route, exc.retry_after if exc.retry_after is not None else 1.0)
                raise

    return pace


class Rehearsals:
    """The running adapters' rehearsals (``App`` attaches its adapters and pacers once open)."""

    def __init__(self, clock: Clock, sleep: Sleep = asyncio.sleep) -> None:
        self.clock = clock
        self.sleep = sleep
        self._adapters: dict[Platform, Adapter] = {}
        self._pacers: dict[Platform, Pacer] = {}
        self._deletions: set[asyncio.Task[None]] = set()

    def attach(
        self, adapters: Mapping[Platform, Adapter], pacers: Mapping[Platform, Pacer]
    ) -> None:
        self._adapters, self._pacers = dict(adapters), dict(pacers)

    async def rehearse(
        self, count_id: str, title: str, channels: Sequence[ChannelRef], *, keep: bool
    ) -> Outcome:
        """Post the test message to each of ``channels`` at once; delete them again after
        ``KEEP_S`` unless ``keep``."""
        if not self._adapters:
            raise CommandError("rehearse needs the running bot (its platforms are not open)")
        message = rehearsal_message(count_id, title)
        run = secrets.token_hex(4)
        results = await asyncio.gather(
            *(self._post(c, message, f"rh{run}{i}") for i, c in enumerate(channels))
        )
        posted = tuple((c, r) for c, r in zip(channels, results, strict=True) if isinstance(r, str))
        failed = tuple(r for r in results if isinstance(r, Failed))
        for f in failed:
            log.warning("rehearsal of %s failed in %s", count_id, f)
        if posted and not keep:
            task = asyncio.create_task(self._delete_later(posted), name="rehearsal deletion")
            self._deletions.add(task)
            task.add_done_callback(self._deletions.discard)
        return Outcome(posted, failed, keep)

    async def _post(self, channel: ChannelRef, message: Message, key: str) -> str | Failed:
        adapter = self._adapters.get(channel.platform)
        if adapter is None:
            return Failed(channel, f"{channel.platform} is not enabled in this bot's configuration")
        pace = paced(self._pacers.get(channel.platform))
        for attempt in range(1, TRIES + 1):
            try:
                return await adapter.post(channel, message, key=key, pace=pace)
            except RateLimited as exc:  # nothing wrong with the channel: wait, and again
                if attempt == TRIES:
                    return Failed(channel, f"{exc} (still rate limited: rehearse again later)")
                await self.sleep(exc.retry_after if exc.retry_after is not None else 1.0)
            except PermanentDeliveryError as exc:
                return Failed(channel, str(exc), exc.fix)
            except DeliveryError as exc:
                return Failed(channel, f"{exc} (a passing failure: rehearse again)")
        raise AssertionError("unreachable")  # pragma: no cover

    async def _delete_later(self, posted: Sequence[tuple[ChannelRef, str]]) -> None:
        await self.sleep(KEEP_S)
        for channel, message_id in posted:
            adapter = self._adapters[channel.platform]
            try:
                await adapter.delete(
                    channel, message_id, pace=paced(self._pacers.get(channel.platform))
                )
            except DeliveryError as exc:
                log.warning("a rehearsal message in %s stays: %s", channel, exc)

    async def settled(self) -> None:
        """Wait until every deletion under way is done (tests)."""
        while self._deletions:
            await asyncio.gather(*self._deletions, return_exceptions=True)

    async def aclose(self) -> None:
        """Give up the deletions still waiting (their messages stay; logged)."""
        if self._deletions:
            log.warning("%d rehearsal deletions given up as the bot stops", len(self._deletions))
        for task in list(self._deletions):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
