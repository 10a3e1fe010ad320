"""The webhook plug-in's own table in tallybot's store: targets a place's admins registered in
chat (``/count webhook``, :mod:`.chat`), where ``[webhook] allow_chat_targets`` lets them.

The plug-in owns it (``Plugin.tables``): this MetaData declares it as the latest revision in
``migrations/versions/`` leaves it, on a branch of its own (``webhook``). The operator's targets
are not here: they are the configuration file's.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Column, Index, MetaData, String, Table, Text

from bot.platform import NAMING, Id, Tables, UTCDateTime

metadata = MetaData(naming_convention=NAMING)

webhook_targets = Table(
    "webhook_targets",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("place", String(160), nullable=False),  # platform.workspace of the place
    Column("count_id", String(64), nullable=False),
    Column("url", Text, nullable=False),  # a secret of the place's: never shown again
    Column("format", String(8), nullable=False),
    Column("secret", String(64), nullable=True),  # a json target's signing secret
    Column("created_by", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "place"),
)
"""One row per target registered in chat: its channel is ``webhook:<place>/t<id>``."""

TABLES = Tables(metadata, Path(__file__).resolve().parent / "migrations" / "versions")
"""What the plug-in declares (``Plugin.tables``)."""
