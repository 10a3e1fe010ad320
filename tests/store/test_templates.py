"""A test's new store is a copy of one migrated once (``tests/store_template.py``), with the
tables of the plug-ins it is opened with: an ``App``'s store (every installed plug-in's tables)
opens without running Alembic, the core's revisions or a plug-in's branch, and holds what
migrating makes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from bot.platform import Plugins
from bot.store import Database, migrations


async def test_a_new_store_with_the_plugins_tables_opens_without_migrating(
    store_url: str, store_schema: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(The template itself, made the first time a process needs it, migrates in a thread
    apart: not counted.)"""
    ran: list[str] = []
    here = threading.get_ident()
    core, branch = migrations._upgrade, migrations._upgrade_plugin

    def counted_core(conn: Connection, to: str) -> Any:
        if threading.get_ident() == here:
            ran.append("core")
        return core(conn, to)

    def counted_branch(conn: Connection, name: str, tables: migrations.Tables) -> Any:
        if threading.get_ident() == here:
            ran.append(name)
        return branch(conn, name, tables)

    monkeypatch.setattr(migrations, "_upgrade", counted_core)
    monkeypatch.setattr(migrations, "_upgrade_plugin", counted_branch)
    plugins = Plugins.installed().tables()
    assert plugins  # Slack's installations, the webhook targets
    async with (
        Database(store_url, schema=store_schema, plugins=plugins) as db,
        db.connect() as conn,
    ):
        names = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
    assert ran == []
    for tables in plugins.values():
        assert set(tables.metadata.tables) <= names
