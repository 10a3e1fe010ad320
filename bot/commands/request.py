"""What an adapter hands the core for a command (``Request``) and what it shows back (``Reply``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from bot.commands.throttle import Pass
from bot.domain.message import Attachment, Message, Timed
from bot.subscription import ChannelRef, Extra


class Mentions(ABC):
    """Which group a person may have tallybot ping, where they type (a platform gives one)."""

    kind: str = "role"
    """What the platform calls such a group ("role", "user group")."""

    @abstractmethod
    async def resolve(self, typed: str) -> str:
        """The id of the group ``typed`` names (as typed after ``mention=``, or ``@ID``), when
        tallybot and this person may ping it here; a :class:`CommandError` why not."""


@dataclass(frozen=True, slots=True)
class Request:
    channel: ChannelRef
    user_id: str
    user_name: str
    text: str
    admin: bool = False
    """The platform's admin policy says this user is an admin here (never unless it says so)."""
    refusal: str = "refused: not an admin"
    """Why not, for the audit log, when an admin command is refused."""
    place: str = "workspace"
    """What the platform calls where the command comes from ("server", "workspace")."""
    passed: Pass | None = None
    """The limits, already counted by an adapter that had to know them before answering
    (``Throttle.check``); ``None``: counted when the command is handled."""
    supports: frozenset[Extra] = frozenset()
    """The subscription options the platform has (``thread``, ``pin``, ``mention``)."""
    mentions: Mentions | None = None
    """Who may be pinged, when the platform supports ``mention``."""

    @property
    def actor(self) -> str:
        return f"{self.channel.platform}:{self.user_id} ({self.user_name})"


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    message: Message | None = None
    ok: bool = True
    ephemeral: bool = True
    """Shown only to the person who asked (errors, lists); status is shown to them too."""
    attachment: Attachment | None = None
    """A file to show with the text, e.g. the PNG of ``chart``."""
    timed: Timed | None = None
    """The text with its times as values (``history``), for surfaces that show each reader a
    time in their own zone; ``text`` says the same with the times in UTC."""

    @property
    def body(self) -> Timed:
        """The text to show, times as values."""
        return self.timed if self.timed is not None else Timed.of(self.text)


FAILED = Reply(
    "Error: tallybot could not do that (an internal error, in the operator's log); "
    "try again in a minute.",
    ok=False,
)
"""The answer to a command that failed unexpectedly, on every platform (the details are logged)."""
