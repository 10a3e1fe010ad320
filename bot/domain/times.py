"""Times shown to people: in a zone, with the zone named.

The core keeps every time as an aware ``datetime`` (UTC); a surface that cannot show a time in
each reader's own zone (the console, a log, the chart) shows it in a zone it is given:
``[defaults] timezone`` from the configuration, or the machine's own zone when that is not set.

>>> from datetime import UTC, datetime
>>> from zoneinfo import ZoneInfo
>>> at = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)
>>> clock_time(at, UTC)
'8 Apr 2021 18:00 UTC'
>>> clock_time(at, ZoneInfo("America/Chicago"))
'8 Apr 2021 13:00 CDT'
>>> unix(at)
1617904800
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, tzinfo

Zone = tzinfo | None
"""A zone to show times in; None for the machine's own zone (its rules at each instant)."""


def clock_time(at: datetime, zone: Zone = UTC) -> str:
    """``8 Apr 2021 13:00 CDT``: day, month, year, time and the zone's abbreviation."""
    local = at.astimezone(zone)
    name = local.tzname() or local.strftime("%z")
    return f"{local.day} {local:%b %Y %H:%M} {name}"


def unix(at: datetime) -> int:
    """Whole seconds since the epoch (what Discord's and Slack's date markup take)."""
    return int(at.timestamp())


def zone_named(name: str) -> tzinfo:
    """The IANA zone ``name`` (``Europe/Berlin``, ``UTC``); ``ValueError`` saying what is wrong,
    with the nearest known names, when there is none by that name."""
    import difflib

    if name.strip() != name or not name:
        raise ValueError(f"{name!r} is not a time zone name (like 'Europe/Berlin' or 'UTC')")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        pass
    known = zoneinfo.available_timezones()
    if not known:
        raise ValueError(
            f"unknown time zone {name!r}: this machine has no time zone database "
            "(install the tzdata package)"
        )
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered:
        return zoneinfo.ZoneInfo(lowered[name.lower()])
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown time zone {name!r}{hint}; names look like 'Europe/Berlin'")
