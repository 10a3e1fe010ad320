"""Telegram as a tallybot plug-in (the ``tallybot.adapters`` entry point ``telegram``).

Light to import: aiogram is loaded only when the adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.platform import AdminPolicy, Checkup, Context, Plugin, Problem, SecretNeed

from .settings import BOT_TOKEN, SECRET_NAMES, WEBHOOK_SECRET, TelegramSettings

if TYPE_CHECKING:
    from .adapter import TelegramAdapter


def build(settings: TelegramSettings, context: Context) -> TelegramAdapter:
    from .adapter import TelegramAdapter

    return TelegramAdapter(settings, context)


async def doctor(settings: TelegramSettings, checkup: Checkup) -> list[Problem]:
    from .doctor import check

    return await check(settings, checkup)


def secrets(settings: TelegramSettings) -> tuple[SecretNeed, ...]:
    """The bot token; in webhook mode the secret Telegram sends back with every update."""
    return (SecretNeed(BOT_TOKEN), SecretNeed(WEBHOOK_SECRET, required=settings.mode == "webhook"))


def admins(settings: TelegramSettings) -> AdminPolicy:
    from .commands import TelegramAdmins

    return TelegramAdmins(settings)


PLUGIN: Plugin[TelegramSettings] = Plugin(
    name="telegram",
    settings=TelegramSettings,
    build=build,
    secrets=secrets,
    secret_names=SECRET_NAMES,
    admins=admins,
    place="chat",
    channel_example="telegram:-1001234567890/-1001234567890",
    doctor=doctor,
)
