"""What a platform's ``doctor`` check is given and what it finds (``tallybot doctor``,
:mod:`bot.ops.doctor`): the platform's secrets and the channels subscribed on it, each with what its
subscriptions want there; one :class:`Problem` per thing the bot would fail at, with the fix.
A check asks the platform only what it can without posting anything."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.domain.subscription import ChannelRef, Wants
from bot.settings.secrets import Secret


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing the bot would fail at on its platform, and what to do about it."""

    where: str
    """The platform, or the channel (``discord:GUILD/CHANNEL``)."""
    what: str
    fix: str

    def line(self) -> str:
        return f"{self.where}: {self.what}; fix: {self.fix}"


@dataclass(frozen=True, slots=True)
class Subscribed:
    """A channel subscribed on the platform: the counts it follows and what they want there."""

    channel: ChannelRef
    counts: tuple[str, ...]
    wants: tuple[Wants, ...]

    @property
    def threads(self) -> bool:
        return any(w.thread for w in self.wants)

    @property
    def pins(self) -> bool:
        return any(w.pin for w in self.wants)

    @property
    def mentions(self) -> frozenset[str]:
        """The roles (groups) its subscriptions ping."""
        return frozenset(w.mention for w in self.wants if w.mention is not None)

    @property
    def charts(self) -> bool:
        """A final's chart is shown there (every subscription hears the final)."""
        return bool(self.wants)


@dataclass(frozen=True, slots=True)
class Checkup:
    """What a platform's doctor check works with."""

    secrets: Mapping[str, Secret] = field(default_factory=dict)
    """The platform's secrets that are set, by name (``Plugin.secrets``)."""
    channels: tuple[Subscribed, ...] = ()
