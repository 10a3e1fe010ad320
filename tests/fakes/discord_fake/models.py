"""State kept by the fake Discord, and the records tests read back."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]

DISCORD_EPOCH_MS = 1_420_070_400_000

# Permission bits (https://discord.com/developers/docs/topics/permissions).
ADMINISTRATOR = 1 << 3
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
SEND_TTS_MESSAGES = 1 << 12
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
MANAGE_MESSAGES = 1 << 13
READ_MESSAGE_HISTORY = 1 << 16
MENTION_EVERYONE = 1 << 17
USE_EXTERNAL_EMOJIS = 1 << 18
MANAGE_WEBHOOKS = 1 << 29
USE_APPLICATION_COMMANDS = 1 << 31
SEND_MESSAGES_IN_THREADS = 1 << 38
CREATE_PUBLIC_THREADS = 1 << 35
PIN_MESSAGES = 1 << 51
ALL_PERMISSIONS = (1 << 52) - 1

DEFAULT_EVERYONE_PERMISSIONS = (
    VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | ADD_REACTIONS
    | USE_EXTERNAL_EMOJIS
    | USE_APPLICATION_COMMANDS
    | SEND_MESSAGES_IN_THREADS
)
DEFAULT_BOT_PERMISSIONS = DEFAULT_EVERYONE_PERMISSIONS

# Message flags.
FLAG_CROSSPOSTED = 1 << 0
FLAG_IS_CROSSPOST = 1 << 1
FLAG_SUPPRESS_EMBEDS = 1 << 2
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7
FLAG_SUPPRESS_NOTIFICATIONS = 1 << 12
FLAG_COMPONENTS_V2 = 1 << 15

# Gateway intents.
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT


class Snowflakes:
    """Discord-shaped ids: milliseconds since 2015 in the top bits, always increasing."""

    def __init__(self, wall_ms: Callable[[], int]) -> None:
        self._wall_ms = wall_ms
        self._last = 0

    def next(self) -> int:
        value = ((self._wall_ms() - DISCORD_EPOCH_MS) << 22) | (1 << 17)
        value = max(value, self._last + 1)
        self._last = value
        return value

    def on_shard(self, shard: int, count: int) -> int:
        """The next id of a guild whose events go to ``shard`` of ``count`` (Discord's rule,
        ``(id >> 22) % count``): the next id, a few milliseconds later if need be."""
        ms = self.next() >> 22
        ms += (shard - ms) % count
        self._last = max(self._last, (ms << 22) | (1 << 17))
        return self._last


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="microseconds")


@dataclass
class User:
    id: int
    name: str
    bot: bool = False
    global_name: str | None = None
    refuses_dms: bool = False
    """Blocked the bot, or takes no direct messages from server members: opening a DM answers
    400 and a message to it 403, both code 50007."""


@dataclass
class Role:
    id: int
    guild_id: int
    name: str
    permissions: int
    position: int
    managed: bool = False
    mentionable: bool = False
    bot_id: int | None = None


@dataclass
class Member:
    user_id: int
    guild_id: int
    roles: list[int]
    joined_at: str
    extra_permissions: int = 0
    nick: str | None = None


@dataclass
class Overwrite:
    id: int
    type: int  # 0 role, 1 member
    allow: int = 0
    deny: int = 0


@dataclass
class Channel:
    id: int
    guild_id: int | None
    name: str
    type: int  # 0 text, 1 DM
    position: int = 0
    overwrites: list[Overwrite] = field(default_factory=list)
    recipient_id: int | None = None
    deleted: bool = False
    last_message_id: int | None = None
    parent_id: int | None = None
    """A thread's channel (type 11, its id that of the message it was started on)."""


@dataclass
class Webhook:
    """A channel follower webhook (type 2): Discord made it in ``channel_id`` when that channel
    began to follow the announcement channel ``source_channel_id``."""

    id: int
    channel_id: int
    guild_id: int
    source_channel_id: int
    source_guild_id: int
    user_id: int
    """The user its copies are posted as (the source server's name)."""


@dataclass
class Guild:
    id: int
    name: str
    owner_id: int
    joined_at: str
    channels: list[int] = field(default_factory=list)
    roles: dict[int, Role] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)


@dataclass
class RecordedAttachment:
    """One uploaded file, as Discord stored it."""

    id: int
    filename: str
    size: int
    content_type: str | None
    data: bytes
    description: str | None = None


@dataclass
class RecordedMessage:
    """A message's current state. ``edits`` keeps each PATCH body in order."""

    id: int
    channel_id: int
    author_id: int
    content: str
    embeds: list[JSON]
    allowed_mentions: JSON | None
    nonce: str | int | None
    attachments: list[RecordedAttachment]
    components: list[JSON]
    flags: int
    tts: bool
    created_at: float
    type: int = 0
    mentions: list[int] = field(default_factory=list)
    mention_roles: list[int] = field(default_factory=list)
    mention_everyone: bool = False
    pinned: bool = False
    edited_at: float | None = None
    deleted: bool = False
    edits: list[JSON] = field(default_factory=list)
    message_reference: JSON | None = None
    interaction_id: int | None = None
    webhook_id: int | None = None
    created_clock: float = 0.0

    @property
    def edited(self) -> bool:
        return self.edited_at is not None

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & FLAG_EPHEMERAL)


@dataclass
class RecordedRequest:
    """One REST request as the fake saw and answered it."""

    method: str
    path: str  # relative to /api/v10, e.g. "/channels/1/messages"
    query: dict[str, str]
    json: Any
    files: list[RecordedAttachment]
    time: float  # the fake's clock
    status: int = 0
    response: Any = None
    response_headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedCallback:
    """One POST /interactions/{id}/{token}/callback, accepted or not."""

    type: int
    data: JSON | None
    flags: int
    time: float
    status: int
    error_code: int | None = None


@dataclass
class Failure:
    """A failure ``fail_next`` asked for, answered instead of the next matching request."""

    pattern: re.Pattern[str]
    status: int
    times: int
    method: str | None
    after_commit: bool
    retry_after: float
