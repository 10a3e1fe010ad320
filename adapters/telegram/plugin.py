"""Telegram as a tallybot plug-in (the ``tallybot.adapters`` entry point ``telegram``).

Light to import: aiogram is loaded only when the adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.config_reader import Reader
from bot.errors import ConfigError
from bot.platform import AdminPolicy, Context, Plugin, SecretNeed

from .settings import BOT_TOKEN, KEYS, SECRET_NAMES, WEBHOOK_SECRET, TelegramSettings, read_settings

if TYPE_CHECKING:
    from .adapter import TelegramAdapter

PREFIX = "telegram: "


def read(r: Reader) -> TelegramSettings:
    """The ``[telegram]`` table through the existing reader, its problems reported through
    ``r`` (``FILE: telegram.KEY: PROBLEM``, every one of them)."""
    try:
        return read_settings(r.table)
    except ConfigError as exc:
        for problem in exc.problems:
            text = problem.removeprefix(PREFIX)
            key, sep, said = text.partition(": ")
            if not sep:
                key, said = "", text
            if said.startswith("unknown key"):
                continue  # the Reader reports unknown keys itself, with its own hint
            r.problems.add(str(r.error(key, said)))
        return TelegramSettings()


def build(settings: TelegramSettings, context: Context) -> TelegramAdapter:
    from .adapter import TelegramAdapter

    return TelegramAdapter(settings, context)


def secrets(settings: TelegramSettings) -> tuple[SecretNeed, ...]:
    """The bot token; in webhook mode the secret Telegram sends back with every update."""
    return (SecretNeed(BOT_TOKEN), SecretNeed(WEBHOOK_SECRET, required=settings.mode == "webhook"))


def admins(settings: TelegramSettings) -> AdminPolicy:
    from .commands import TelegramAdmins

    return TelegramAdmins(settings)


PLUGIN: Plugin[TelegramSettings] = Plugin(
    name="telegram",
    keys=KEYS,
    read=read,
    build=build,
    secrets=secrets,
    secret_names=SECRET_NAMES,
    admins=admins,
    place="chat",
    channel_example="telegram:-1001234567890/-1001234567890",
)
