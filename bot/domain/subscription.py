"""Who gets what: channels on a platform, subscribed to a count, each hearing what it asked for.

What a subscription hears (:class:`Wants`) is written in one grammar, the same that ``subscribe``
takes and ``list`` shows: the posts it wants (``events``, the default; ``all``; and the filters
``final``, ``calls``, ``leads``; and ``remind``, a reminder shortly before a scheduled count
starts or resumes, see :mod:`bot.domain.schedule`), ``live`` for a scoreboard, ``close=50`` or
``close=2%`` for every update while it is that close, and the options ``mention=@ID``,
``thread``, ``pin`` and ``publish`` (a Discord announcement channel's calls and finals
crossposted to every channel that follows it); ``via=CHANNEL`` makes a channel follow the
operator's announcement channel for the count instead of getting posts of its own. Which update
a subscription takes is decided by the pure :func:`bot.ingest.pipeline.plan`.
"""

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
    """The three ways to subscribe before filters (still a valid :class:`Wants` each)."""

    EVENTS = "events"
    """Significant events only (the default)."""
    ALL = "all"
    """Every accepted change."""
    LIVE = "live"
    """A scoreboard edited in place, plus new posts for significant events."""


class Hear(StrEnum):
    """Which posts a subscription wants; several combine (any of them selects a post)."""

    EVENTS = "events"
    """Significant updates (first results, lead changes, calls, pauses, the final...)."""
    ALL = "all"
    """Every update."""
    FINAL = "final"
    """The final result only."""
    CALLS = "calls"
    """A side clinching, a call withdrawn, whether the challenged ballots decide it, the final."""
    LEADS = "leads"
    """Every change of leader (the first leader, into a tie and out of one)."""
    REMIND = "remind"
    """A reminder a set time before the count starts or resumes (``/count schedule``): no update
    of the count selects it (``remind`` alone hears only the reminders; add ``events`` for more)."""


class Extra(StrEnum):
    """The options a platform may or may not have (``Request.supports``)."""

    MENTION = "mention"
    THREAD = "thread"
    PIN = "pin"
    PUBLISH = "publish"
    """Offered where the channel is a Discord announcement channel (type 5) only."""


HEAR_ORDER = tuple(Hear)
CALL_EVENTS = frozenset(
    {"clinched", "call_withdrawn", "determinative", "not_determinative", "final"}
)
"""The detector's event kinds (``bot.domain.detect.EventKind`` values) that ``calls`` hears."""
LEAD_EVENTS = frozenset({"first_results", "lead_change", "tie"})
"""The event kinds that ``leads`` hears."""


@dataclass(frozen=True, slots=True)
class Close:
    """``close=50`` (``votes``) or ``close=2%`` (``tenths`` of a percent: 20): every update while
    the leader's margin over the runner-up is at most that."""

    votes: int | None = None
    tenths: int | None = None

    def __str__(self) -> str:
        if self.votes is not None:
            return f"close={self.votes}"
        tenths = self.tenths or 0
        whole, part = divmod(tenths, 10)
        return f"close={whole}%" if part == 0 else f"close={whole}.{part}%"

    def holds(self, margin: int, valid: int) -> bool:
        """Whether a margin of ``margin`` votes out of ``valid`` is this close."""
        if valid <= 0:
            return False
        if self.votes is not None:
            return margin <= self.votes
        return margin * 1000 <= (self.tenths or 0) * valid


@dataclass(frozen=True, slots=True)
class Wants:
    """What a subscription hears and how (see the module docstring)."""

    hears: frozenset[Hear] = frozenset({Hear.EVENTS})
    live: bool = False
    close: Close | None = None
    mention: str | None = None
    """The id of the role (Discord) or user group (Slack) pinged on calls and the final."""
    thread: bool = False
    pin: bool = False
    publish: bool = False
    """Its calls and finals are crossposted to the channels that follow it (Discord)."""
    via: str | None = None
    """The announcement channel this channel follows for the count (posts of its own: none)."""

    @property
    def reminds(self) -> bool:
        """Whether it hears the reminders before a scheduled start or restart.

        >>> Wants.from_words("calls remind").reminds, Wants().reminds
        (True, False)
        """
        return Hear.REMIND in self.hears

    @classmethod
    def of(cls, mode: Mode) -> Wants:
        """The subscription a plain ``events``, ``all`` or ``live`` makes."""
        return cls(frozenset({Hear.ALL if mode is Mode.ALL else Hear.EVENTS}), mode is Mode.LIVE)

    @property
    def words(self) -> str:
        """What it hears in the grammar, without ``close`` and the options: the store's
        ``mode`` column (``events``, ``all`` and ``live`` are what subscriptions said before
        filters, and mean the same)."""
        hears = [h.value for h in HEAR_ORDER if h in self.hears]
        if self.live and hears == [Hear.EVENTS.value]:
            hears = []
        return " ".join((["live"] if self.live else []) + hears)

    @classmethod
    def from_words(
        cls,
        words: str,
        *,
        close: Close | None = None,
        mention: str | None = None,
        thread: bool = False,
        pin: bool = False,
        publish: bool = False,
        via: str | None = None,
    ) -> Wants:
        """The inverse of :attr:`words`, with the other fields."""
        split = words.split()
        hears = frozenset(Hear(w) for w in split if w != "live") or frozenset({Hear.EVENTS})
        return cls(hears, "live" in split, close, mention, thread, pin, publish, via)

    def grammar(self) -> str:
        """Everything, as ``subscribe`` takes it: ``live calls close=50 mention=@123 thread``."""
        if self.via is not None:
            return f"via=#{self.via}"
        parts = [self.words]
        if self.close is not None:
            parts.append(str(self.close))
        if self.mention is not None:
            parts.append(f"mention=@{self.mention}")
        flags = (("thread", self.thread), ("pin", self.pin), ("publish", self.publish))
        parts += [o for o, on in flags if on]
        return " ".join(parts)

    def changes(self, before: Wants, pinged: str | None = None) -> list[str]:
        """What differs from ``before``, in words (``subscribe`` on a subscribed channel);
        ``pinged``: who this one's ``mention`` is, by name."""
        out: list[str] = []
        if before.via != self.via:
            out.append(f"via {_shown(self.via, '#')} (was {_shown(before.via, '#')})")
        if before.words != self.words and self.via is None:
            out.append(f"hears {self.words} (was {before.words})")
        pairs = (
            ("close", before.close, self.close),
            ("mention", before.mention, self.mention),
            ("thread", before.thread, self.thread),
            ("pin", before.pin, self.pin),
            ("publish", before.publish, self.publish),
        )
        for name, old, new in pairs:
            if old != new:
                now = pinged if name == "mention" and new is not None and pinged else _shown(new)
                out.append(f"{name} {now} (was {_shown(old)})")
        return out


def _shown(value: object, sign: str = "@") -> str:
    if value is None or value is False:
        return "off"
    if value is True:
        return "on"
    if isinstance(value, Close):
        return str(value).removeprefix("close=")
    return f"{sign}{value}"


@dataclass(frozen=True, slots=True)
class ChannelRef:
    """A channel on a platform: ``workspace`` is the Discord guild or Slack team id.

    ``thread``: the thread under that message of the channel (a subscription's ``thread``):
    the place a delivery goes to, never stored with it."""

    platform: Platform
    workspace: str
    channel: str
    thread: str | None = None
    member: str | None = None
    """A direct message that may go only to a member of ``workspace`` (a follow of that
    place's own count, not public: ``bot.store.sight.member_of``): the person's id, whom
    the adapter asks the platform about first; never stored."""

    def __str__(self) -> str:
        where = f"{self.platform}:{self.workspace}/{self.channel}"
        return where if self.thread is None else f"{where} (thread {self.thread})"


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    channel: ChannelRef
    count_id: str
    wants: Wants
    created_by: str
    created_at: datetime
    enabled: bool = True
    disabled_reason: str | None = None
    live_message_id: str | None = None
    thread_message_id: str | None = None
    """The parent message of the count's thread in this channel (``thread``)."""
    follow_webhook: str | None = None
    """The webhook the platform made in this channel when it began to follow (``via=``): what
    ``unsubscribe`` deletes to end the follow."""
    direct: bool = False
    """A person's follow (``bot.domain.follow``): ``channel`` is their DM channel and ``id``
    the follow's; its deliveries are ``DeliveryAction.DIRECT``."""

    @property
    def mode(self) -> Mode:
        """The nearest of the three plain modes (what it was before filters)."""
        if self.wants.live:
            return Mode.LIVE
        return Mode.ALL if Hear.ALL in self.wants.hears else Mode.EVENTS
