"""Discord as a tallybot plug-in (the ``tallybot.adapters`` entry point ``discord``).

Light to import: discord.py is loaded only when the adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.discord import invite
from adapters.discord.admins import DiscordAdmins
from adapters.discord.settings import MOVED, TOKEN, DiscordSettings
from bot.platform import Checkup, CliCommand, Context, Plugin, Problem, SecretNeed

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter


def build(settings: DiscordSettings, context: Context) -> DiscordAdapter:
    from adapters.discord.adapter import DiscordAdapter

    return DiscordAdapter(settings, context)


async def doctor(settings: DiscordSettings, checkup: Checkup) -> list[Problem]:
    from adapters.discord.doctor import check

    return await check(settings, checkup)


def secrets(settings: DiscordSettings) -> tuple[SecretNeed, ...]:
    return (SecretNeed(TOKEN),)


PLUGIN: Plugin[DiscordSettings] = Plugin(
    name="discord",
    settings=DiscordSettings,
    build=build,
    secrets=secrets,
    secret_names=(TOKEN,),
    admins=DiscordAdmins,
    place="server",
    channel_example="discord:GUILD_ID/CHANNEL_ID",
    moved=MOVED,
    commands=(
        CliCommand(
            "invite",
            "print the Discord install URL (scopes, permissions)",
            invite.add_arguments,
            invite.run,
        ),
    ),
    doctor=doctor,
)
