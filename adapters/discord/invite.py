"""The Discord install link: the bot's scopes and the smallest permissions it needs.

The permission integer is computed from named flags (Discord's documented bit positions), one
per thing the bot does, so the link asks for nothing more:

========================  ====  ==============================================================
VIEW_CHANNEL              10    see the channels it is subscribed in
SEND_MESSAGES             11    post updates
SEND_MESSAGES_IN_THREADS  38    post updates when subscribed from a thread
EMBED_LINKS               14    updates are embeds
ATTACH_FILES              15    attach images or files to updates (charts)
READ_MESSAGE_HISTORY      16    find and edit its own earlier messages (live scoreboards)
CREATE_PUBLIC_THREADS     35    a subscription's ``thread``: a thread on its first message
PIN_MESSAGES              51    a subscription's ``pin``: pin the live scoreboard
========================  ====  ==============================================================

Slash commands need the ``applications.commands`` scope, not a permission.
"""

from __future__ import annotations

import argparse
import os
import re
from enum import IntFlag
from functools import reduce
from operator import or_
from urllib.parse import urlencode

from bot.platform import ConfigError

AUTHORIZE = "https://discord.com/oauth2/authorize"
SCOPES = ("bot", "applications.commands")
CLIENT_ID_ENV = "DISCORD_APPLICATION_ID"
_SNOWFLAKE = re.compile(r"[0-9]{15,21}")


class Permission(IntFlag):
    """Discord permission bits (https://discord.com/developers/docs/topics/permissions)."""

    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    SEND_MESSAGES_IN_THREADS = 1 << 38
    CREATE_PUBLIC_THREADS = 1 << 35
    PIN_MESSAGES = 1 << 51


NEEDED: tuple[Permission, ...] = (
    Permission.VIEW_CHANNEL,
    Permission.SEND_MESSAGES,
    Permission.SEND_MESSAGES_IN_THREADS,
    Permission.EMBED_LINKS,
    Permission.ATTACH_FILES,
    Permission.READ_MESSAGE_HISTORY,
    Permission.CREATE_PUBLIC_THREADS,
    Permission.PIN_MESSAGES,
)
"""What the bot needs, and nothing else (see the module docstring for why each)."""


def permissions(needed: tuple[Permission, ...] = NEEDED) -> int:
    """The permission integer for ``needed``."""
    return int(reduce(or_, needed, Permission(0)))


def invite_url(client_id: str) -> str:
    """The link that installs the bot with its scopes and :func:`permissions`."""
    client_id = client_id.strip()
    if not _SNOWFLAKE.fullmatch(client_id):
        raise ConfigError(
            f"client id {client_id[:30]!r} is not a Discord application id (15 to 21 digits; "
            "see the Developer Portal, General Information)"
        )
    query = urlencode(
        {"client_id": client_id, "scope": " ".join(SCOPES), "permissions": permissions()}
    )
    return f"{AUTHORIZE}?{query}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--client-id",
        default=None,
        help=f"the Discord application id (default: ${CLIENT_ID_ENV})",
    )


def run(args: argparse.Namespace) -> int:
    """``tallybot invite``: print the install URL."""
    client_id = args.client_id or os.environ.get(CLIENT_ID_ENV)
    if not client_id:
        raise ConfigError(f"give --client-id or set {CLIENT_ID_ENV}")
    print(invite_url(client_id))
    return 0
