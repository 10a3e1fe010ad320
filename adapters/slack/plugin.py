"""Slack as a tallybot plug-in (the ``tallybot.adapters`` entry point ``slack``).

Light to import: slack-bolt is loaded only when the adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.slack.admins import SlackAdmins
from adapters.slack.settings import (
    APP_TOKEN,
    BOT_TOKEN,
    CLIENT_SECRET,
    MOVED,
    SIGNING_SECRET,
    SlackSettings,
)
from adapters.slack.tables import TABLES
from bot.platform import Checkup, Context, Plugin, Problem, SecretNeed

if TYPE_CHECKING:
    from adapters.slack.adapter import SlackAdapter


def build(settings: SlackSettings, context: Context) -> SlackAdapter:
    from adapters.slack.adapter import SlackAdapter

    return SlackAdapter(settings, context)


async def doctor(settings: SlackSettings, checkup: Checkup) -> list[Problem]:
    from adapters.slack.doctor import check

    return await check(settings, checkup)


def secrets(settings: SlackSettings) -> tuple[SecretNeed, ...]:
    """The bot token (optional with the OAuth flow, which needs the client secret instead);
    in Socket Mode the app token, in HTTP mode the signing secret."""
    socket = settings.mode == "socket"
    return (
        SecretNeed(BOT_TOKEN, required=not settings.oauth),
        SecretNeed(APP_TOKEN, required=socket),
        SecretNeed(SIGNING_SECRET, required=not socket),
        SecretNeed(CLIENT_SECRET, required=settings.oauth),
    )


PLUGIN: Plugin[SlackSettings] = Plugin(
    name="slack",
    settings=SlackSettings,
    build=build,
    secrets=secrets,
    secret_names=(BOT_TOKEN, APP_TOKEN, SIGNING_SECRET, CLIENT_SECRET),
    admins=SlackAdmins,
    place="workspace",
    channel_example="slack:TEAM_ID/CHANNEL_ID",
    moved=MOVED,
    doctor=doctor,
    tables=TABLES,
)
