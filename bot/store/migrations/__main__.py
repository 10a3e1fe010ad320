"""Write a new store revision: ``python -m bot.store.migrations "what changes"``
(``make migration MSG="what changes"`` runs it).

It migrates a scratch SQLite store to the latest revision, compares it with
``bot.store.schema`` (Alembic's autogenerate) and writes ``versions/vNNNN_what_changes.py``
with the next number and the operations found, in batch form (SQLite rebuilds a table for a
change ALTER TABLE cannot make), formatted and fixed by ruff (what it cannot fix, it prints).
Read what it wrote: autogenerate sees tables, columns, types, indexes and constraints, not
renames or data that must move.
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
from bot.store.migrations import alembic_config, latest, upgrade

RUFF = {
    "ruff_format": "-m ruff format --quiet REVISION_SCRIPT_FILENAME",
    "ruff_fix": "-m ruff check --fix --exit-zero --quiet REVISION_SCRIPT_FILENAME",
}
"""Alembic's post-write hooks: the new file comes out lint-clean where ruff can fix it."""


def next_revision() -> str:
    """The number after the latest revision, as four digits."""
    return f"{int(latest()) + 1:04d}"


async def write_revision(message: str, *, empty: bool = False) -> Path:
    """Write the next revision from the difference with ``bot.store.schema``; return its path."""
    rev_id = next_revision()
    with tempfile.TemporaryDirectory() as scratch:
        engine = make_engine(f"sqlite+aiosqlite:///{Path(scratch) / 'scratch.sqlite3'}")
        try:
            await upgrade(engine)

            def write(conn: Connection) -> Path:
                cfg = alembic_config(conn)
                for name, options in RUFF.items():
                    cfg.set_section_option("post_write_hooks", f"{name}.type", "exec")
                    cfg.set_section_option("post_write_hooks", f"{name}.executable", sys.executable)
                    cfg.set_section_option("post_write_hooks", f"{name}.options", options)
                cfg.set_section_option("post_write_hooks", "hooks", ", ".join(RUFF))
                script = command.revision(
                    cfg, message=message, autogenerate=not empty, rev_id=rev_id
                )
                assert script is not None
                assert not isinstance(script, list)
                return Path(script.path)

            async with engine.connect() as conn:
                return await conn.run_sync(write)
        finally:
            await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.store.migrations", description=__doc__)
    parser.add_argument("message", help='what the revision changes, e.g. "push receipts"')
    parser.add_argument(
        "--empty", action="store_true", help="write an empty revision (for data-only changes)"
    )
    args = parser.parse_args(argv)
    path = asyncio.run(write_revision(args.message, empty=args.empty))
    print(f"wrote {path}: read it, then add an upgrade test that keeps data")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
