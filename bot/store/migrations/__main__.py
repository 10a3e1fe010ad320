"""Write a new store revision: ``python -m bot.store.migrations "what changes"``
(``make migration MSG="what changes"`` runs it).

It migrates a scratch SQLite store to the latest revision, compares it with
``bot.store.schema`` (Alembic's autogenerate) and writes ``versions/vNNNN_what_changes.py``
with the next number and the operations found, in batch form (SQLite rebuilds a table for a
change ALTER TABLE cannot make), formatted and fixed by ruff (what it cannot fix, it prints).
Read what it wrote: autogenerate sees tables, columns, types, indexes and constraints, not
renames or data that must move.

``--plugin NAME`` (``make migration PLUGIN=NAME MSG=...``) writes the next revision of an
installed plug-in's own branch instead, from the difference with its ``Plugin.tables``, into
its folder of revisions (the first one with ``branch_labels=(NAME,)``); it imports nothing of
``bot``, as a plug-in's code may not.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from alembic import command
from sqlalchemy import Connection

from bot.store.engine import make_engine
from bot.store.migrations import FORWARD_ONLY, Tables, alembic_config, latest, scripts, upgrade

RUFF = {
    "ruff_format": "-m ruff format --quiet REVISION_SCRIPT_FILENAME",
    "ruff_fix": "-m ruff check --fix --exit-zero --quiet REVISION_SCRIPT_FILENAME",
}
"""Alembic's post-write hooks: the new file comes out lint-clean where ruff can fix it."""


def next_revision(plugin: tuple[str, Tables] | None = None) -> str:
    """The number after the latest revision (the core's, or a plug-in's), as four digits."""
    head = latest() if plugin is None else scripts(*plugin).get_current_head()
    return f"{int(head or 0) + 1:04d}"


async def write_revision(
    message: str, *, empty: bool = False, plugin: tuple[str, Tables] | None = None
) -> Path:
    """Write the next revision from the difference with ``bot.store.schema`` (or ``plugin``'s
    tables); return its path."""
    rev_id = next_revision(plugin)
    with tempfile.TemporaryDirectory() as scratch:
        engine = make_engine(f"sqlite+aiosqlite:///{Path(scratch) / 'scratch.sqlite3'}")
        try:
            await upgrade(engine, plugins=dict([plugin]) if plugin else None)

            def write(conn: Connection) -> Path:
                cfg = alembic_config(conn, *(plugin or (None, None)))
                for name, options in RUFF.items():
                    cfg.set_section_option("post_write_hooks", f"{name}.type", "exec")
                    cfg.set_section_option("post_write_hooks", f"{name}.executable", sys.executable)
                    cfg.set_section_option("post_write_hooks", f"{name}.options", options)
                cfg.set_section_option("post_write_hooks", "hooks", ", ".join(RUFF))
                where: dict[str, str] = {}
                if plugin is not None:
                    name, tables = plugin
                    first = rev_id == "0001"
                    where = {"version_path": str(tables.versions)}
                    where |= {"head": "base", "branch_label": name} if first else {}
                    where |= {} if first else {"head": f"{name}@head"}
                script = command.revision(
                    cfg,
                    message=message,
                    autogenerate=not empty,
                    rev_id=rev_id,
                    **where,  # type: ignore[arg-type]
                )
                assert script is not None
                assert not isinstance(script, list)
                return Path(script.path)

            async with engine.connect() as conn:
                path = await conn.run_sync(write)
        finally:
            await engine.dispose()
    if plugin is not None:  # a plug-in's code imports nothing of bot but its door
        text = path.read_text().replace("from bot.store.migrations import FORWARD_ONLY\n", "")
        text = text.replace(
            "branch_labels: str | None = (", "branch_labels: tuple[str, ...] | None = ("
        )
        text = text.replace(", after ; created", ", the first of its branch; created")
        path.write_text(text.replace("(FORWARD_ONLY)", f"({FORWARD_ONLY!r})"))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.store.migrations", description=__doc__)
    parser.add_argument("message", help='what the revision changes, e.g. "push receipts"')
    parser.add_argument(
        "--empty", action="store_true", help="write an empty revision (for data-only changes)"
    )
    parser.add_argument("--plugin", help="a revision of this installed plug-in's own tables")
    args = parser.parse_args(argv)
    plugin = None
    if args.plugin:
        from bot.platform import Plugins  # late: the store does not import the platform door

        tables = Plugins.installed().tables()
        if args.plugin not in tables:
            parser.error(f"no installed plug-in {args.plugin!r} has tables: {', '.join(tables)}")
        plugin = (args.plugin, tables[args.plugin])
    path = asyncio.run(write_revision(args.message, empty=args.empty, plugin=plugin))
    print(f"wrote {path}: read it, then add an upgrade test that keeps data")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
