"""Slack's own tables in tallybot's store: the app's installations, each workspace's bot and
the OAuth states of install links (:mod:`adapters.slack.installations` reads and writes them).

The plug-in owns them (``Plugin.tables``): this MetaData declares them as the latest revision
in ``migrations/versions/`` leaves them, a branch of their own (``slack``) that the store runs
after the core's whenever it opens (``bot.store.migrations``). The core's revision 0009 made
them before they moved here (issue 29); the branch's first revision adopts those.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Boolean, Column, Index, MetaData, String, Table, Text

from bot.platform import NAMING, Id, Tables, UTCDateTime

metadata = MetaData(naming_convention=NAMING)

slack_installations = Table(
    "slack_installations",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("client_id", String(64), nullable=False),
    Column("enterprise_id", String(32), nullable=True),
    Column("team_id", String(32), nullable=True),  # None: an org-wide (Enterprise Grid) install
    Column("user_id", String(32), nullable=True),  # who installed
    Column("is_enterprise_install", Boolean, nullable=False),
    Column("data", Text, nullable=False),  # JSON: slack_sdk's Installation, tokens as given
    Column("installed_at", UTCDateTime, nullable=False),
    Index(None, "client_id", "enterprise_id", "team_id", "user_id"),
)
"""Installations of a Slack app through its OAuth flow, latest last. Kept as slack_sdk's
installation stores keep them."""

slack_bots = Table(
    "slack_bots",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("client_id", String(64), nullable=False),
    Column("enterprise_id", String(32), nullable=True),
    Column("team_id", String(32), nullable=True),
    Column("is_enterprise_install", Boolean, nullable=False),
    Column("data", Text, nullable=False),  # JSON: slack_sdk's Bot, its token as given
    Column("installed_at", UTCDateTime, nullable=False),
    Index(None, "client_id", "enterprise_id", "team_id"),
)
"""The bot of each workspace that installed the app, latest last: what the Slack adapter posts
with there."""

oauth_states = Table(
    "oauth_states",
    metadata,
    Column("state", String(64), primary_key=True),
    Column("expires_at", UTCDateTime, nullable=False),
    Index(None, "expires_at"),
)
"""OAuth ``state`` values handed out with an install link, each usable once before it expires."""

TABLES = Tables(metadata, Path(__file__).resolve().parent / "migrations" / "versions")
"""What the plug-in declares (``Plugin.tables``)."""
