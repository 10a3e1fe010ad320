"""Slack as a tallybot plug-in (the ``tallybot.adapters`` entry point ``slack``).

Light to import: slack-bolt is loaded only when the adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.slack.admins import SlackAdmins
from adapters.slack.settings import (
    APP_TOKEN,
    BOT_TOKEN,
    MOVED,
    SIGNING_SECRET,
    SlackSettings,
)
from bot.platform import Context, Plugin, SecretNeed

if TYPE_CHECKING:
    from adapters.slack.adapter import SlackAdapter


def build(settings: SlackSettings, context: Context) -> SlackAdapter:
    from adapters.slack.adapter import SlackAdapter

    return SlackAdapter(settings, context)


def secrets(settings: SlackSettings) -> tuple[SecretNeed, ...]:
    """The bot token; in Socket Mode the app token, in HTTP mode the signing secret."""
    socket = settings.mode == "socket"
    return (
        SecretNeed(BOT_TOKEN),
        SecretNeed(APP_TOKEN, required=socket),
        SecretNeed(SIGNING_SECRET, required=not socket),
    )


PLUGIN: Plugin[SlackSettings] = Plugin(
    name="slack",
    settings=SlackSettings,
    build=build,
    secrets=secrets,
    secret_names=(BOT_TOKEN, APP_TOKEN, SIGNING_SECRET),
    admins=SlackAdmins,
    place="workspace",
    channel_example="slack:TEAM_ID/CHANNEL_ID",
    moved=MOVED,
)
