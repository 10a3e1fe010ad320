"""Limits on commands, the same on every platform: per person, and on public replies per channel.

One member sent 200 ``/count status`` in 0.02 s and all 200 were answered in the channel. Now:

- a person (per platform and workspace) gets at most :data:`PER_USER` commands carried out in
  any window; beyond that, each command is answered privately with how long to wait;
- a channel gets at most :data:`PUBLIC_PER_CHANNEL` public replies in any window; a reply that
  would be public beyond that is shown only to the person who asked.

Both are sliding windows on the injected clock (``Clock.monotonic``), counted by the same
limiter the dispatcher paces deliveries with (:class:`~bot.delivery.ratelimit.RateLimiter`), here
only asked, never waited on. The state is per process and bounded (:data:`MAX_KEYS` people and
channels each, the least recently seen forgotten first).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from cachetools import LRUCache

from bot.base.clock import Clock
from bot.delivery.pacing import Window
from bot.delivery.ratelimit import RateLimiter
from bot.domain.subscription import ChannelRef

PER_USER = Window(8, 20.0)
"""Commands one person may have carried out in any 20 seconds: more than anyone types, far
less than a script sends."""
PUBLIC_PER_CHANNEL = Window(1, 5.0)
"""Public replies one channel gets in any 5 seconds; more are private."""
MAX_KEYS = 10_000


class _Windows:
    """One sliding window per key, the least recently used forgotten beyond ``MAX_KEYS``."""

    def __init__(self, window: Window, clock: Clock, max_keys: int) -> None:
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        self._limiters: LRUCache[Hashable, RateLimiter] = LRUCache(max_keys)

    def take(self, key: Hashable) -> float:
        """Count one for ``key`` if it may go now and return 0; else the seconds to wait."""
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = RateLimiter(self.window.limit, self.window.seconds, self.clock, margin=0)
            self._limiters[key] = limiter
        wait = limiter.delay()
        if wait <= 0:
            limiter.note(1)
        return wait


@dataclass(frozen=True, slots=True)
class Pass:
    """What the limits said about one command, counted when it came in."""

    wait: float
    """0: carry it out; else the seconds until the person may send another."""
    public: bool
    """Its reply may be shown to the channel (the channel's public reply is taken for it)."""


class Throttle:
    def __init__(
        self,
        clock: Clock,
        *,
        per_user: Window = PER_USER,
        public_per_channel: Window = PUBLIC_PER_CHANNEL,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.per_user = per_user
        self.public_per_channel = public_per_channel
        self._users = _Windows(per_user, clock, max_keys)
        self._channels = _Windows(public_per_channel, clock, max_keys)

    @staticmethod
    def _person(channel: ChannelRef, user_id: str) -> tuple[str, str, str]:
        return (str(channel.platform), channel.workspace, user_id)

    def admit(self, channel: ChannelRef, user_id: str) -> float:
        """Count a command of ``user_id``; 0 if it may be carried out, else seconds to wait."""
        return self._users.take(self._person(channel, user_id))

    def publish(self, channel: ChannelRef) -> bool:
        """Whether a reply may be shown to ``channel`` now (and count it if so)."""
        return self._channels.take(channel) <= 0

    def check(self, channel: ChannelRef, user_id: str, *, public: bool) -> Pass:
        """Count a command now and, if it would be answered in public and the channel may be
        shown one, that reply: for an adapter that must say public or private before the
        answer is known (Discord defers first). The pass goes with the request."""
        wait = self.admit(channel, user_id)
        return Pass(wait, public=wait <= 0 and public and self.publish(channel))
