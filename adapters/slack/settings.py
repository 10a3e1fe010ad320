"""The ``[slack]`` table: Socket Mode or HTTP, where Slack is, and who is an admin.

Checked with the rest of the file (:mod:`bot.settings`); a key is one line below.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bot.platform import Filled, Flag, Host, HttpUrl, Ids, PlatformTable, Port, Text, one_of
from bot.platform import LimitsSetting as Limits

BOT_TOKEN = "SLACK_BOT_TOKEN"
APP_TOKEN = "SLACK_APP_TOKEN"
SIGNING_SECRET = "SLACK_SIGNING_SECRET"
CLIENT_SECRET = "SLACK_CLIENT_SECRET"
SCOPES = (
    "app_mentions:read", "channels:history", "chat:write", "commands", "files:write",
    "groups:history", "im:history", "im:write", "pins:write", "users:read",
)  # fmt: skip
"""The bot scopes tallybot uses (``config/slack-manifest.yml``): what the install flow asks."""
MOVED = {
    "slack_users": "admin_users",
    "slack_workspaces": "admin_workspaces",
    "slack_workspace_admins": "workspace_admins",
}
"""The keys of ``[admins]`` that moved here, and their new names."""

Mode = Literal["socket", "http"]


class SlackSettings(PlatformTable):
    mode: Annotated[Mode, one_of(["socket", "http"], "mode")] = "socket"
    api_base: HttpUrl = "https://slack.com/api/"
    http_path: Text = "/slack/events"
    host: Host = "127.0.0.1"
    """HTTP mode without a ``[server]`` table: the address the endpoint listens on."""
    port: Port = 3000
    """HTTP mode without a ``[server]`` table: the port (with ``[server]``, the ops server's)."""
    limits: Limits = Field(default_factory=dict)
    """``[slack.limits]``: buckets of ``adapters.slack.delivery.SLACK_LIMITS`` changed by name."""
    admin_users: Ids = frozenset()
    """User ids that are admins in every workspace."""
    admin_workspaces: Ids = frozenset()
    """Team ids where (with ``workspace_admins``) workspace admins and owners are admins."""
    workspace_admins: Flag = True
    client_id: Text | None = None
    """The app's client id: turns on the OAuth install flow (many workspaces, one bot token
    each, kept in the store); its secret comes from ``SLACK_CLIENT_SECRET``."""
    scopes: list[Filled] = Field(default_factory=lambda: list(SCOPES))
    install_path: Text = "/slack/install"
    redirect_path: Text = "/slack/oauth_redirect"
    redirect_uri: HttpUrl | None = None
    """The public URL of ``redirect_path`` as registered with Slack; not set: the app's first
    Redirect URL (Slack's default)."""
    authorize_url: HttpUrl = "https://slack.com/oauth/v2/authorize"

    @property
    def oauth(self) -> bool:
        """Whether the OAuth install flow is on (``client_id`` set)."""
        return self.client_id is not None
