"""Tenants' API keys for the push API (revision 0006), kept as the SHA-256 of their secret part:
the token itself is shown once, when it is made, and never stored or logged.

A token reads ``tbk_<id>_<secret>``: ``id`` finds its row, and the SHA-256 of ``secret`` (32
random bytes, URL-safe base64) is compared with the stored one in constant time
(:func:`check`), so a token is known by no index lookup on its secret.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import api_keys

TOKEN = re.compile(r"^tbk_([0-9]{1,18})_([A-Za-z0-9_-]{43})$")
_NOTHING = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: int
    owner: str
    created_by: str
    created_at: datetime
    revoked_at: datetime | None


def _key(row: Row[Any]) -> ApiKey:
    return ApiKey(row.id, row.owner, row.created_by, row.created_at, row.revoked_at)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def create(conn: AsyncConnection, owner: str, *, by: str, at: datetime) -> tuple[ApiKey, str]:
    """A new key for ``owner`` and its token (to be shown once; only its digest is kept)."""
    secret = secrets.token_urlsafe(32)
    new_id = await conn.scalar(
        insert(api_keys)
        .values(owner=owner, digest=_digest(secret), created_by=by, created_at=at)
        .returning(api_keys.c.id)
    )
    assert new_id is not None
    return ApiKey(int(new_id), owner, by, at, None), f"tbk_{new_id}_{secret}"


async def check(conn: AsyncConnection, token: str) -> ApiKey | None:
    """The live key ``token`` is, or None (unknown, revoked, or not a token)."""
    found = TOKEN.match(token)
    key_id, secret = (int(found.group(1)), found.group(2)) if found else (0, "")
    row = (await conn.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
    stored = row.digest if row is not None else _NOTHING
    same = hmac.compare_digest(stored, _digest(secret))
    if row is None or not found or not same or row.revoked_at is not None:
        return None
    return _key(row)


async def revoke(conn: AsyncConnection, key_id: int, owner: str, *, at: datetime) -> bool:
    """Revoke ``owner``'s key ``key_id``; False if it has no such live key."""
    c = api_keys.c
    result = await conn.execute(
        update(api_keys)
        .where(c.id == key_id, c.owner == owner, c.revoked_at.is_(None))
        .values(revoked_at=at)
    )
    return result.rowcount > 0


async def for_owner(conn: AsyncConnection, owner: str) -> list[ApiKey]:
    """``owner``'s live keys, oldest first."""
    c = api_keys.c
    rows = await conn.execute(
        select(api_keys).where(c.owner == owner, c.revoked_at.is_(None)).order_by(c.id)
    )
    return [_key(r) for r in rows]
