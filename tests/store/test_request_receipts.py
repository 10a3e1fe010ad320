"""Request receipts on SQLite and PostgreSQL: a request is new once while its receipt lasts, one
whose receipt expired is new again (taken over in the same statement), and the expired ones are
deleted by a purge."""

from __future__ import annotations

from datetime import timedelta

from bot.store import Database, request_receipts
from tests.test_store import T0

LATER = T0 + timedelta(minutes=6)


async def test_a_request_is_new_once_while_its_receipt_lasts(db: Database) -> None:
    async with db.begin() as conn:
        assert await request_receipts.first(
            conn, ["sig:a", "trigger:1"], at=T0, expires_at=T0 + timedelta(minutes=6)
        )
        assert not await request_receipts.first(
            conn, ["sig:a", "trigger:1"], at=T0, expires_at=T0 + timedelta(minutes=6)
        )
        # re-signed (a new signature), the same trigger_id: seen; its new signature is kept
        assert not await request_receipts.first(
            conn, ["sig:b", "trigger:1"], at=T0, expires_at=T0 + timedelta(minutes=6)
        )
        assert not await request_receipts.first(
            conn, ["sig:b"], at=T0, expires_at=T0 + timedelta(minutes=6)
        )
        assert await request_receipts.first(conn, ["sig:c", "sig:c"], at=T0, expires_at=LATER)
        assert await request_receipts.first(conn, [], at=T0, expires_at=LATER)
        assert await request_receipts.count(conn) == 4


async def test_an_expired_receipt_is_taken_over_and_purged(db: Database) -> None:
    async with db.begin() as conn:
        assert await request_receipts.first(conn, ["sig:a"], at=T0, expires_at=LATER)
        assert await request_receipts.first(conn, ["sig:b"], at=T0, expires_at=LATER)
    after = LATER + timedelta(seconds=1)
    async with db.begin() as conn:
        assert not await request_receipts.first(conn, ["sig:a"], at=LATER, expires_at=after)
        assert await request_receipts.first(
            conn, ["sig:a"], at=after, expires_at=after + timedelta(minutes=6)
        )
        assert not await request_receipts.first(
            conn, ["sig:a"], at=after, expires_at=after + timedelta(minutes=6)
        )  # taken over: it lasts from now
        await request_receipts.purge(conn, after)
        assert await request_receipts.count(conn) == 1  # sig:b went
