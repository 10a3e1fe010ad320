"""A plug-in's own tables (issue 29): its Alembic branch runs after the core's when the store
opens, on SQLite and PostgreSQL, with its version in a table of its own. Slack's installations
moved out of the core this way: a store the old core revisions made keeps its rows (the
branch's first revision adopts the tables), a new one gets the tables from the branch only."""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store.models.installation import Installation
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, inspect, text

from adapters.slack.installations import StoreInstallations, StoreStates, _as_json
from adapters.slack.tables import TABLES, oauth_states, slack_bots, slack_installations
from bot.errors import StoreError
from bot.store import Database, migrations
from bot.store.engine import make_engine
from bot.store.migrations import Tables
from bot.store.migrations.__main__ import write_revision
from bot.store.schema import NAMING
from bot.testing.clock import FakeClock
from tests.store.test_migrations import Store, differences

pytestmark = pytest.mark.fresh_store  # what migrating from nothing makes: no template copy

OLD_HEAD = "0016"
"""The core's head before Slack's tables moved to the plug-in (its 0009 made them)."""
SLACK = {"slack": TABLES}
CLIENT = "1111.2222"
MOVED = {"slack_installations", "slack_bots", "oauth_states"}


def tables_of(conn: object) -> set[str]:
    return set(inspect(conn).get_table_names())


async def test_an_old_store_keeps_its_slack_installations_through_the_move(
    store_url: str, store_schema: str | None
) -> None:
    clock = FakeClock()
    team = Installation(
        app_id="A1",
        team_id="TA",
        bot_token="xoxb-old",
        bot_id="BTA",
        bot_user_id="UTABOT",
        bot_scopes="chat:write,commands",
        user_id="U1",
        installed_at=1_617_900_000.0,
    )
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to=OLD_HEAD, schema=store_schema)
        async with engine.begin() as conn:
            assert await conn.run_sync(tables_of) >= MOVED  # the old core made them
            row = {
                "client_id": CLIENT,
                "enterprise_id": None,
                "team_id": "TA",
                "is_enterprise_install": False,
                "installed_at": clock.now(),
            }
            await conn.execute(
                insert(slack_installations).values(
                    **row, user_id="U1", data=_as_json(team.to_dict_for_copying())
                )
            )
            bot = _as_json(team.to_bot().to_dict_for_copying())
            await conn.execute(insert(slack_bots).values(**row, data=bot))
            await conn.execute(
                insert(oauth_states).values(state="s1", expires_at=clock.now().replace(year=2030))
            )
    async with Database(store_url, schema=store_schema, plugins=SLACK) as db:
        async with db.connect() as conn:
            assert await migrations.current_version(conn) == migrations.latest()
            assert await migrations.current_version(conn, "slack") == "0001"
            assert await conn.run_sync(differences, SLACK) == []
        store = StoreInstallations(db, CLIENT, clock)
        found = await store.async_find_installation(enterprise_id=None, team_id="TA")
        assert found is not None
        assert (found.bot_token, found.user_id, found.bot_scopes) == (
            "xoxb-old",
            "U1",
            ["chat:write", "commands"],
        )
        their_bot = await store.async_find_bot(enterprise_id=None, team_id="TA")
        assert their_bot is not None
        assert their_bot.bot_token == "xoxb-old"
        assert await StoreStates(db, clock).async_consume("s1")


async def test_an_old_store_without_installations_gets_the_tables_from_the_branch(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to=OLD_HEAD, schema=store_schema)
        applied = await migrations.upgrade(engine, schema=store_schema, plugins=SLACK)
        assert applied[-2:] == [migrations.latest(), "slack@0001"]  # the core first, then Slack's
        async with engine.connect() as conn:
            assert await conn.run_sync(tables_of) >= MOVED
            assert await conn.run_sync(differences, SLACK) == []


async def test_a_new_store_has_slack_tables_only_from_the_slack_branch(
    store_url: str, store_schema: str | None
) -> None:
    """Without the plug-in, no table of Slack's; with it, its tables and version; opened again
    without it (a tallybot without Slack), the store opens and Slack's tables stay."""
    async with Database(store_url, schema=store_schema) as db, db.connect() as conn:
        assert not MOVED & await conn.run_sync(tables_of)
        assert await migrations.current_version(conn, "slack") is None
        assert await conn.run_sync(differences) == []
    async with Database(store_url, schema=store_schema, plugins=SLACK) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(tables_of) >= MOVED
            assert await migrations.current_version(conn, "slack") == "0001"
        await StoreStates(db, FakeClock()).async_issue()
    async with Database(store_url, schema=store_schema) as db, db.connect() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM oauth_states")) == 1


async def test_a_branch_newer_than_the_plugin_is_refused(
    store_url: str, store_schema: str | None
) -> None:
    db = Database(store_url, schema=store_schema, plugins=SLACK)
    async with db, db.begin() as conn:
        await conn.execute(text("UPDATE alembic_version_slack SET version_num = '0099'"))
    with pytest.raises(StoreError, match=r"slack tables are at revision 0099, newer than"):
        async with Database(store_url, schema=store_schema, plugins=SLACK):
            pass


async def test_a_branch_without_its_label_is_refused(
    store_url: str, store_schema: str | None, tmp_path: Path
) -> None:
    """The first revision of a plug-in's branch names it (``branch_labels=(NAME,)``)."""
    versions = tmp_path / "versions"
    versions.mkdir()
    (versions / "v0001_things.py").write_text(
        'revision = "0001"\ndown_revision = None\nbranch_labels = ("other",)\n'
        "depends_on = None\n\ndef upgrade():\n    pass\n"
    )
    plugins = {"things": Tables(MetaData(), versions)}
    with pytest.raises(StoreError, match="cannot upgrade the things plug-in's tables"):
        async with Database(store_url, schema=store_schema, plugins=plugins):
            pass


async def test_make_migration_writes_a_plugins_first_revision_and_it_builds_its_tables(
    tmp_path: Path,
) -> None:
    """``make migration PLUGIN=x``: the first revision of a new branch, labelled with the
    plug-in's name, importing nothing of ``bot``, makes exactly the declared tables."""
    meta = MetaData(naming_convention=NAMING)
    Table("things", meta, Column("id", Integer, primary_key=True), Column("name", String(32)))
    (tmp_path / "versions").mkdir()
    tables = Tables(meta, tmp_path / "versions")
    path = await write_revision("things", plugin=("things", tables))
    written = path.read_text()
    assert 'branch_labels: tuple[str, ...] | None = ("things",)' in written
    assert "down_revision: str | None = None" in written
    assert "bot" not in written.replace("tallybot", "")  # nothing of bot imported
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        applied = await migrations.upgrade(engine, plugins={"things": tables})
        assert applied[-1] == "things@0001"
        async with engine.connect() as conn:
            assert await conn.run_sync(differences, {"things": tables}) == []
    finally:
        await engine.dispose()
