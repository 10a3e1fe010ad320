"""The audit log: who did what to which count, and whether they were allowed to.

An address in an entry keeps only its scheme and host: a webhook's path or query, or a
source's, may be its secret (Slack's incoming webhooks carry it in the path, Teams' in the
query), and the log is read by every admin (:func:`withheld`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import audit_log
from bot.store.statements import check_limit


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audited action. ``old`` and ``new`` are the value before and after, as text.

    ``id`` is ``None`` until the entry is recorded.
    """

    at: datetime
    actor: str
    action: str
    count_id: str | None = None
    old: str | None = None
    new: str | None = None
    allowed: bool = True
    detail: str = ""
    id: int | None = None


_CUT = "/\u2026"
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/\s?#@]*@)?([^/\s?#]*)([^\s]*)")


def withheld(text: str | None) -> str | None:
    """``text`` with each address cut to its scheme and host (and any user or password gone).

    >>> withheld("webhook bessemer-2021 https://hooks.slack.com/services/T1/B2/s3cr3t slack")
    'webhook bessemer-2021 https://hooks.slack.com/… slack'
    >>> withheld("source https://user:pw@feed.example.org?key=abc, then http://x.org")
    'source https://feed.example.org/…, then http://x.org'
    >>> withheld(None) is None
    True
    """
    if text is None:
        return None

    def cut(m: re.Match[str]) -> str:
        rest = m.group(3).rstrip(".,;:!)")
        tail = m.group(3)[len(rest) :]
        return f"{m.group(1)}{m.group(2)}{'/…' if rest.strip('/') else rest}{tail}"

    return _URL.sub(cut, text)


def _entry(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        at=row.at,
        actor=row.actor,
        action=row.action,
        count_id=row.count_id,
        old=row.old,
        new=row.new,
        allowed=row.allowed,
        detail=row.detail,
        id=row.id,
    )


async def record(conn: AsyncConnection, entry: AuditEntry) -> int:
    """Append ``entry`` to the log (its ``id`` is ignored); returns the new entry's id."""
    new_id = await conn.scalar(
        insert(audit_log)
        .values(
            at=entry.at,
            actor=entry.actor,
            action=entry.action,
            count_id=entry.count_id,
            old=withheld(entry.old),
            new=withheld(entry.new),
            allowed=entry.allowed,
            detail=withheld(entry.detail),
        )
        .returning(audit_log.c.id)
    )
    assert new_id is not None
    return int(new_id)


async def recent(
    conn: AsyncConnection, *, limit: int = 50, count_id: str | None = None
) -> list[AuditEntry]:
    """The latest ``limit`` entries (only the count's, if ``count_id`` is given), newest first."""
    stmt = select(audit_log).order_by(audit_log.c.id.desc()).limit(check_limit(limit))
    if count_id is not None:
        stmt = stmt.where(audit_log.c.count_id == count_id)
    return [_entry(row) for row in await conn.execute(stmt)]
