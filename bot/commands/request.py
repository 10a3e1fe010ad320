"""What an adapter hands the core for a command (``Request``) and what it shows back (``Reply``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from bot.commands.forms import Opening
from bot.commands.throttle import Pass
from bot.domain.message import Attachment, Message, Timed
from bot.domain.subscription import ChannelRef, Extra


class Mentions(ABC):
    """Which group a person may have tallybot ping, where they type (a platform gives one)."""

    kind: str = "role"
    """What the platform calls such a group ("role", "user group")."""

    @abstractmethod
    async def resolve(self, typed: str) -> str:
        """The id of the group ``typed`` names (as typed after ``mention=``, or ``@ID``), when
        tallybot and this person may ping it here; a :class:`CommandError` why not."""


class Names(ABC):
    """Who an id is, where a command comes from (a platform gives one): what replies show
    instead of the id, as plain text that pings nobody. ``None``: not known (the platform says
    nothing, or a lookup needs a right tallybot lacks); the reply then says what the id is."""

    @abstractmethod
    async def user(self, user_id: str) -> str | None:
        """The name of the user ``user_id`` here."""

    @abstractmethod
    async def group(self, group_id: str) -> str | None:
        """The name of the role or user group ``group_id`` here (without a leading ``@``)."""


class Follows(ABC):
    """Channel following, where a command comes from (Discord gives one): this channel follows
    the operator's announcement channel for a count (``subscribe <count> via=#channel``)."""

    @abstractmethod
    async def follow(self, count_id: str, announcement: str) -> str:
        """Make this channel follow ``announcement`` for ``count_id``, when the operator lets
        that channel be followed for the count and tallybot may here; the id of what the
        platform made for it (Discord's webhook). A :class:`CommandError` (one line) why not."""

    @abstractmethod
    async def unfollow(self, made: str) -> str | None:
        """End a follow (delete what :meth:`follow` made); None when done, else what the
        person must do by hand (one line)."""


class Inbox(ABC):
    """The direct messages of the person who asked with the bot (a platform that has them
    gives one): where their follows' messages go (``follow``)."""

    @abstractmethod
    async def open(self) -> str:
        """The id of the DM channel with the person, opened if need be (a request paced as a
        reply); a :class:`CommandError` saying why there is none (on Telegram, they have not
        started the bot: the error gives its link)."""


async def user_called(request: Request, user_id: str) -> str:
    """The user ``user_id`` in a reply to ``request``: their name, else ``user ID``."""
    name = await request.names.user(user_id) if request.names is not None else None
    return name if name else f"user {user_id}"


async def group_called(request: Request, group_id: str) -> str:
    """The group ``group_id`` in a reply: ``the role NAME`` (the platform's word for a
    group), else ``the role ID``."""
    kind = request.mentions.kind if request.mentions is not None else "role"
    name = await request.names.group(group_id) if request.names is not None else None
    return f"the {kind} {name}" if name else f"the {kind} {group_id}"


REFUSED = "refused: not an admin"
"""The refusal a platform's policy gives when it has nothing more to say."""


@dataclass(frozen=True, slots=True)
class Request:
    channel: ChannelRef
    user_id: str
    user_name: str
    text: str
    admin: bool = False
    """The platform's admin policy says this user is one of the operator's admins: they
    administer the operator's counts (never unless it says so)."""
    refusal: str = REFUSED
    """Why not, for the audit log, when an admin command is refused."""
    tenant_admin: bool = False
    """The platform says this user administers the place the command comes from (Manage Server
    in this Discord server, an admin of this Slack workspace): they administer its counts."""
    home: bool = False
    """The place is one of the operator's own (listed in its configuration): the operator's
    private counts are seen here."""
    channel_admin: bool = True
    """They may change what this channel gets (subscribe it): on Discord, Manage Channels
    here; on the other platforms anyone in the channel."""
    private_replies: bool = True
    """The platform can show a reply to the asker alone (Telegram cannot in a group): a secret
    (a new API key) is only ever shown where it can."""
    roles: frozenset[str] = frozenset()
    """The user's role ids in this place (per-count grants may name a role)."""
    place: str = "workspace"
    """What the platform calls where the command comes from ("server", "workspace")."""
    passed: Pass | None = None
    """The limits, already counted by an adapter that had to know them before answering
    (``Throttle.check``); ``None``: counted when the command is handled."""
    supports: frozenset[Extra] = frozenset()
    """The subscription options the platform has (``thread``, ``pin``, ``mention``)."""
    mentions: Mentions | None = None
    """Who may be pinged, when the platform supports ``mention``."""
    names: Names | None = None
    """Who ids are here, for replies that name a user or a group (None: ids only)."""
    follows: Follows | None = None
    """Channel following here (``via=``), where the platform has it."""
    inbox: Inbox | None = None
    """The person's direct messages with the bot, on a platform that has them (``follow``)."""
    form: bool = False
    """The text asks for the verb's form (``VerbSpec.opens_form``), on a platform that shows
    forms: checked as the command is, and answered with the form (``Reply.form``), not carried
    out."""

    @property
    def tenant(self) -> str:
        """The tenant the command comes from: ``platform:place`` (a count's owner when it is
        created here)."""
        return f"{self.channel.platform}:{self.channel.workspace}"

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
    form: Opening | None = None
    """The form to show, when the request asked for it (``Request.form``) and may have it."""

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
