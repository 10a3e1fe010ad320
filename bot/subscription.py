"""Who gets what: channels on a platform, subscribed to a count in a mode."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NewType

Platform = NewType("Platform", str)
"""A platform's name, as its plug-in is registered (``tallybot.adapters`` entry points, see
``bot.platform``) and as the store keeps it: ``"discord"``, ``"slack"``, ``"console"``. An open
name, not a closed list: a new platform is a new plug-in, not an edit here."""


class Mode(StrEnum):
    EVENTS = "events"
    """Significant events only (the default)."""
    ALL = "all"
    """Every accepted change."""
    LIVE = "live"
    """A scoreboard edited in place, plus new posts for significant events."""


@dataclass(frozen=True, slots=True)
class ChannelRef:
    """A channel on a platform: ``workspace`` is the Discord guild or Slack team id."""

    platform: Platform
    workspace: str
    channel: str

    def __str__(self) -> str:
        return f"{self.platform}:{self.workspace}/{self.channel}"


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    channel: ChannelRef
    count_id: str
    mode: Mode
    created_by: str
    created_at: datetime
    enabled: bool = True
    disabled_reason: str | None = None
    live_message_id: str | None = None
