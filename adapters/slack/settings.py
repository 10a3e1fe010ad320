"""The ``[slack]`` table: Socket Mode or HTTP, where Slack is, and who is an admin."""

from __future__ import annotations

from dataclasses import dataclass

from bot.config_platforms import read_host, read_limits, read_port
from bot.config_reader import Reader

BOT_TOKEN = "SLACK_BOT_TOKEN"
APP_TOKEN = "SLACK_APP_TOKEN"
SIGNING_SECRET = "SLACK_SIGNING_SECRET"
KEYS = (
    "mode", "api_base", "http_path", "host", "port", "limits",
    "admin_users", "admin_workspaces", "workspace_admins",
)  # fmt: skip
MOVED = {
    "slack_users": "admin_users",
    "slack_workspaces": "admin_workspaces",
    "slack_workspace_admins": "workspace_admins",
}
"""The keys of ``[admins]`` that moved here, and their new names."""


@dataclass(frozen=True, slots=True)
class SlackSettings:
    mode: str = "socket"
    api_base: str = "https://slack.com/api/"
    http_path: str = "/slack/events"
    host: str = "127.0.0.1"
    """HTTP mode without a ``[server]`` table: the address the endpoint listens on."""
    port: int = 3000
    """HTTP mode without a ``[server]`` table: the port (with ``[server]``, the ops server's)."""
    limits: tuple[tuple[str, int, float], ...] = ()
    """``[slack.limits]``: buckets of ``adapters.slack.delivery.SLACK_LIMITS`` changed by name."""
    admin_users: frozenset[str] = frozenset()
    """User ids that are admins in every workspace."""
    admin_workspaces: frozenset[str] = frozenset()
    """Team ids where (with ``workspace_admins``) workspace admins and owners are admins."""
    workspace_admins: bool = True


def read(r: Reader) -> SlackSettings:
    d = SlackSettings()
    mode = r.get("mode", str, d.mode)
    if mode not in ("socket", "http"):
        raise r.error("mode", "must be 'socket' or 'http'")
    return SlackSettings(
        mode=mode,
        api_base=r.get("api_base", str, d.api_base),
        http_path=r.get("http_path", str, d.http_path),
        host=read_host(r, d.host),
        port=read_port(r, d.port),
        limits=read_limits(r),
        admin_users=_ids(r, "admin_users"),
        admin_workspaces=_ids(r, "admin_workspaces"),
        workspace_admins=r.get("workspace_admins", bool, True),
    )


def _ids(r: Reader, key: str) -> frozenset[str]:
    return frozenset(str(v) for v in r.get(key, list, []))
