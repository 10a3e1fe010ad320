"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, DateTime, Dialect, Integer
from sqlalchemy.types import TypeDecorator

Id = BigInteger().with_variant(Integer(), "sqlite")
"""A surrogate key: BIGINT on PostgreSQL, INTEGER on SQLite (so that it is the rowid)."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp, stored in UTC and always read back aware (UTC).

    PostgreSQL keeps it as ``timestamptz``. SQLite has no timestamp type: SQLAlchemy stores text
    and drops the offset, so values are converted to UTC before they are written (which also
    keeps text comparisons such as ``next_attempt_at <= now`` correct) and tagged UTC on read.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Refuse naive datetimes (their meaning is a guess); convert aware ones to UTC."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"the store only accepts timezone-aware datetimes, got {value!r}")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return the stored instant as an aware UTC datetime."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
