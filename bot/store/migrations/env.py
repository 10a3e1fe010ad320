"""Alembic's environment for the store: run by :func:`bot.store.migrations.upgrade`, never alone.

The runner passes the connection it has locked and begun a transaction on
(``config.attributes["connection"]``), so every revision runs inside that one transaction and
Alembic neither connects nor commits. ``render_as_batch``: on SQLite, a change that ALTER TABLE
cannot make (a column's type, a constraint) rebuilds the table (copy, drop, rename); the runner
switches foreign keys off around it, as SQLite's documentation asks. A plug-in's branch runs
here too, with its own MetaData and version table (``config.attributes``).
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from sqlalchemy.types import TypeDecorator

from bot.errors import StoreError
from bot.store.schema import metadata


def render_item(kind: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    """Write a column of one of our own types (``UTCDateTime``) as the SQLAlchemy type it
    stores as, so that a revision does not depend on code that may change after it."""
    if kind == "type" and isinstance(obj, TypeDecorator):
        return f"sa.{obj.impl_instance!r}"
    return False


config = context.config
connection = config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise StoreError(
        "the store's migrations run from bot.store.migrations (opening the store runs them; "
        "`make migration MSG=...` writes a new one), not from the alembic command line"
    )

context.configure(
    connection=connection,
    target_metadata=config.attributes.get("metadata", metadata),  # a plug-in's, or the core's
    version_table=config.attributes.get("version_table", "alembic_version"),
    render_as_batch=True,
    compare_type=True,
    render_item=render_item,
    on_version_apply=config.attributes.get("on_version_apply"),
)
with context.begin_transaction():  # inside the runner's transaction: adds none of its own
    context.run_migrations()
