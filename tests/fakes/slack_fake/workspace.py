"""The fake workspace: team, bot, channels, users, messages and ts values."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .limits import SlackError
from .records import RecordedSlackMessage

FIRST_TS_MICROS = 1_700_000_000_000_100
TS_STEP_MICROS = 100


@dataclass
class Channel:
    id: str
    name: str
    created: int
    team_id: str = ""
    is_private: bool = False
    is_member: bool = True
    is_archived: bool = False
    deleted: bool = False
    messages: list[RecordedSlackMessage] = field(default_factory=list)
    im_user: str | None = None
    """A direct message with the bot: the member's id."""
    refusal: str | None = None
    """A direct message Slack refuses to post to, with this error (``refuse_dm``)."""

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "name_normalized": self.name,
            "is_channel": not self.is_private and self.im_user is None,
            "is_group": False,
            "is_im": self.im_user is not None,
            **({"user": self.im_user} if self.im_user is not None else {}),
            "is_mpim": False,
            "is_private": self.is_private,
            "is_archived": self.is_archived,
            "is_general": False,
            "is_member": self.is_member,
            "is_shared": False,
            "is_ext_shared": False,
            "is_org_shared": False,
            "created": self.created,
            "creator": "",
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
        }


@dataclass
class User:
    id: str
    name: str
    team_id: str
    is_admin: bool = False
    is_owner: bool = False
    is_bot: bool = False
    deleted: bool = False
    """Deactivated."""

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "team_id": self.team_id,
            "name": self.name,
            "deleted": self.deleted,
            "real_name": self.name,
            "tz": "Etc/UTC",
            "tz_label": "Coordinated Universal Time",
            "tz_offset": 0,
            "is_admin": self.is_admin,
            "is_owner": self.is_owner,
            "is_primary_owner": False,
            "is_restricted": False,
            "is_ultra_restricted": False,
            "is_bot": self.is_bot,
            "is_app_user": False,
            "updated": 1_700_000_000,
            "profile": {
                "real_name": self.name,
                "display_name": self.name,
                "team": self.team_id,
            },
        }


class Workspace:
    def __init__(self) -> None:
        self.team_id = "T0FAKE0001"
        self.team_domain = "fake-team"
        self.team_name = "Fake Team"
        self.app_id = "A0FAKE0001"
        self.bot_id = "B0FAKE0001"
        self.bot_user_id = "U0FAKEBOT1"
        self.bot_name = "tallybot"
        self.enterprise_id = "E0FAKE0001"
        self.teams: dict[str, tuple[str, str]] = {self.team_id: (self.team_domain, self.team_name)}
        """team id -> (domain, name): the workspaces the app is installed in."""
        self.standalone: set[str] = set()
        """Workspaces on their own (outside the organisation), each installing through OAuth."""
        self.channels: dict[str, Channel] = {}
        self.users: dict[str, User] = {
            self.bot_user_id: User(self.bot_user_id, self.bot_name, self.team_id, is_bot=True)
        }
        self._ts = itertools.count(FIRST_TS_MICROS, TS_STEP_MICROS)
        self._ids = itertools.count(1)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}0FAKE{next(self._ids):05d}"

    def next_ts(self) -> str:
        micros = next(self._ts)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    # ----------------------------------------------------------- workspaces

    @property
    def org_install(self) -> bool:
        """Installed in several workspaces of one Enterprise Grid organisation (one token)."""
        return len(self.teams) - len(self.standalone) > 1

    def add_team(self, domain: str, name: str, *, standalone: bool = False) -> str:
        team_id = f"T0FAKE{len(self.teams) + 1:04d}"
        self.teams[team_id] = (domain, name)
        if standalone:
            self.standalone.add(team_id)
        return team_id

    def known_team(self, team_id: str | None) -> str:
        team = team_id or self.team_id
        if team not in self.teams:
            raise KeyError(f"no workspace {team!r} in the fake organisation")
        return team

    # ------------------------------------------------------------- channels

    def add_channel(
        self, name: str, *, member: bool, is_private: bool, team_id: str | None = None
    ) -> str:
        name = name.lstrip("#")
        if any(c.name == name and not c.deleted for c in self.channels.values()):
            raise ValueError(f"channel #{name} already exists")
        channel = Channel(
            self.next_id("C"),
            name,
            created=1_700_000_000,
            team_id=self.known_team(team_id),
            is_private=is_private,
            is_member=member,
        )
        self.channels[channel.id] = channel
        return channel.id

    def known_channel(self, channel_id: str) -> Channel:
        """For test-side helpers: a typo in a test is a bug, not a Slack error."""
        channel = self.channels.get(channel_id)
        if channel is None:
            raise KeyError(f"no channel {channel_id!r} in the fake workspace")
        return channel

    def find_channel(self, ref: Any) -> Channel:
        """Resolve a `channel` argument (ID, name or #name) as the API sees it."""
        if not isinstance(ref, str) or not ref:
            raise SlackError("channel_not_found")
        channel = self.channels.get(ref)
        if channel is None:
            name = ref.lstrip("#")
            channel = next((c for c in self.channels.values() if c.name == name), None)
        if channel is None or channel.deleted:
            raise SlackError("channel_not_found")
        # The bot cannot see a private channel it is not in.
        if channel.is_private and not channel.is_member:
            raise SlackError("channel_not_found")
        return channel

    def open_im(self, user_id: Any) -> Channel:
        """conversations.open with one member: their direct message with the bot (the same
        one each time), refused for a deactivated member or a bot, as Slack does."""
        user = self.users.get(user_id) if isinstance(user_id, str) else None
        if user is None:
            raise SlackError("user_not_found")
        if user.is_bot:
            raise SlackError("cannot_dm_bot")
        if user.deleted:
            raise SlackError("user_disabled")
        found = next((c for c in self.channels.values() if c.im_user == user.id), None)
        if found is None:
            found = Channel(self.next_id("D"), user.id, 1_700_000_000, user.team_id, True)
            found.im_user = user.id
            self.channels[found.id] = found
        return found

    def writable_channel(self, ref: Any) -> Channel:
        channel = self.find_channel(ref)
        if channel.refusal is not None:
            raise SlackError(channel.refusal)
        if channel.is_archived:
            raise SlackError("is_archived")
        if not channel.is_member:
            raise SlackError("not_in_channel")
        return channel

    # ---------------------------------------------------------------- users

    def add_user(
        self, name: str, *, is_admin: bool, is_owner: bool, team_id: str | None = None
    ) -> str:
        """A member of ``team_id`` (default: the first workspace); admin or owner of it."""
        team = self.known_team(team_id)
        user = User(self.next_id("U"), name, team, is_admin=is_admin, is_owner=is_owner)
        self.users[user.id] = user
        return user.id

    def known_user(self, user_id: str) -> User:
        user = self.users.get(user_id)
        if user is None:
            raise KeyError(f"no user {user_id!r} in the fake workspace")
        return user

    # ------------------------------------------------------------- messages

    def find_message(self, channel: Channel, ts: Any) -> RecordedSlackMessage:
        if not isinstance(ts, str) or not ts:
            raise SlackError("message_not_found")
        for message in channel.messages:
            if message.ts == ts and not message.deleted:
                return message
        raise SlackError("message_not_found")

    def add_message(
        self,
        channel: Channel,
        *,
        text: str,
        blocks: list[dict[str, Any]] | None,
        metadata: dict[str, Any] | None,
        user: str,
        from_bot: bool,
        thread_ts: str | None,
        source: str,
        now: float,
        files: list[dict[str, Any]] | None = None,
    ) -> RecordedSlackMessage:
        message = RecordedSlackMessage(
            channel=channel.id,
            ts=self.next_ts(),
            text=text,
            blocks=blocks,
            metadata=metadata,
            user=user,
            bot_id=self.bot_id if from_bot else None,
            thread_ts=thread_ts,
            posted_at=now,
            source=source,
            files=files,
        )
        channel.messages.append(message)
        return message
