"""When a count starts, or when its pause ends, and the reminders a little before.

A count carries at most one scheduled time (:class:`Schedule`): when it ``starts`` (before its
first figures) or when it ``resumes`` (a pause ends). It is typed as an ISO 8601 time with its
offset (``2021-04-09T09:00-05:00``, ``...Z``), with an IANA zone in brackets
(``2021-04-09T09:00[America/Chicago]``), or without either in the configured zone
(``[defaults] timezone``). :func:`parse_when` turns it into an aware UTC time or says in one
line why it cannot: a time in the past, an offset or a zone no place has, a local time a clock
change skips, a naive time with no zone configured. The words (:func:`note`,
:func:`reminder`) keep the time a value (:class:`~bot.domain.message.Moment`), so each surface
shows it in its reader's zone (Discord and Slack) or in the configured one (Telegram, the
console); the public page in the browser's.

A subscription that hears ``remind`` (``bot.domain.subscription.Hear.REMIND``) gets a reminder
``lead`` before the time (15 minutes unless the count or ``[defaults] remind_before`` says
otherwise), once per scheduled time: "Bessemer: the count resumes in 15 minutes" (the message's
title names the count); a changed time reminds again, saying it moved.

>>> from datetime import UTC, datetime
>>> now = datetime(2021, 4, 8, 23, 0, tzinfo=UTC)
>>> at = parse_when("2021-04-09T09:00-05:00", None, now)
>>> at.isoformat()
'2021-04-09T14:00:00+00:00'
>>> str(note(Schedule("bessemer", When.RESUMES, at), now))
'The count resumes at 9 Apr 2021 14:00 UTC (in 15 hours).'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum

from bot.domain.message import Message, Moment, Significance, Timed
from bot.domain.times import zone_named
from bot.domain.words import duration_words

DEFAULT_REMIND = timedelta(minutes=15)
"""How long before a scheduled time its reminder goes, unless configured."""
MIN_REMIND = timedelta(minutes=1)
MAX_REMIND = timedelta(hours=24)
"""The range a count's or the configuration's ``remind_before`` may take."""
MAX_AHEAD = timedelta(days=366)
"""The furthest ahead a count may be scheduled."""
MAX_OFFSET = timedelta(hours=14)
"""No place's clock is further from UTC (Kiribati, UTC+14)."""
MAX_WHEN = 64
"""The longest a typed time may be, in characters."""
REMINDER = "reminder"
"""A reminder's event kind (``Message.events``)."""

_BRACKETED = re.compile(r"^([^\[\]]+)\[([^\[\]]+)\]$")
_LEAD = re.compile(r"^([0-9]{1,4})(m|min|h)?$")


class ScheduleError(ValueError):
    """A time that cannot be scheduled; its text is the one-line answer."""


class When(StrEnum):
    """What a scheduled time is: the count's start, or the end of its pause."""

    STARTS = "starts"
    RESUMES = "resumes"

    @property
    def noun(self) -> str:
        """``start`` or ``restart`` (the reminder of a moved time says which moved)."""
        return "start" if self is When.STARTS else "restart"


@dataclass(frozen=True, slots=True)
class Schedule:
    """A count's scheduled time, as the store keeps it."""

    count_id: str
    kind: When
    at: datetime
    """Aware, UTC."""
    remind_before: timedelta | None = None
    """This count's lead time for reminders; None: the configured default."""
    moved_from: datetime | None = None
    """The time it was scheduled for before it was last changed (its reminder says so)."""

    def lead(self, default: timedelta = DEFAULT_REMIND) -> timedelta:
        return self.remind_before if self.remind_before is not None else default

    def remind_at(self, default: timedelta = DEFAULT_REMIND) -> datetime:
        """When its reminder is due."""
        return self.at - self.lead(default)


def parse_when(text: str, zone: tzinfo | None, now: datetime | None) -> datetime:
    """``text`` as an aware UTC time (see the module docstring); ``zone``: the configured zone
    for a time typed without one; ``now``: None to take a time in the past (a configuration
    file read after its count started). A :class:`ScheduleError` when it cannot be scheduled.

    >>> from zoneinfo import ZoneInfo
    >>> now = datetime(2021, 3, 1, tzinfo=UTC)
    >>> parse_when("2021-04-08T13:00[America/Chicago]", None, now).isoformat()
    '2021-04-08T18:00:00+00:00'
    >>> parse_when("2021-04-08T13:00", ZoneInfo("America/Chicago"), now).isoformat()
    '2021-04-08T18:00:00+00:00'
    >>> parse_when("2021-03-14T02:30[America/Chicago]", None, now)  # the clocks skip it
    Traceback (most recent call last):
    ...
    bot.domain.schedule.ScheduleError: 2021-03-14T02:30 does not exist in America/Chicago ...
    """
    from bot.domain.times import clock_time

    shown = text[:MAX_WHEN]
    if len(text) > MAX_WHEN:
        raise ScheduleError(f"{shown}...: a time is at most {MAX_WHEN} characters")
    bracketed = _BRACKETED.match(text)
    named = None
    if bracketed is not None:
        text, name = bracketed.groups()
        try:
            named = zone_named(name)
        except ValueError as exc:
            raise ScheduleError(str(exc)) from None
    try:
        at = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise ScheduleError(
            f"{shown!r} is not a time: write it like 2021-04-08T13:00-05:00"
        ) from None
    if at.tzinfo is not None and named is not None:
        raise ScheduleError(f"{shown}: give an offset or a zone, not both")
    local = named or zone
    if at.tzinfo is None:
        if local is None:
            raise ScheduleError(
                f"{shown} has no time zone and none is configured: write it with its offset "
                f"({text}-05:00) or zone ({text}[America/Chicago])"
            )
        aware = at.replace(tzinfo=local)
        back = aware.astimezone(UTC).astimezone(local)
        if back.replace(tzinfo=None) != at:
            raise ScheduleError(f"{text} does not exist in {local} (the clocks skip that hour)")
        at = aware
    offset = at.utcoffset() or timedelta(0)
    if abs(offset) > MAX_OFFSET:
        raise ScheduleError(f"{shown}: no place is more than 14 hours from UTC")
    at = at.astimezone(UTC)
    if now is None:
        return at
    if at <= now:
        raise ScheduleError(f"{shown} is in the past (it is now {clock_time(now, UTC)})")
    if at - now > MAX_AHEAD:
        raise ScheduleError(f"{shown} is more than a year ahead: schedule it nearer the time")
    return at


def parse_lead(text: str) -> timedelta:
    """``remind=`` as a lead time: ``15`` or ``15m`` minutes, ``2h`` hours.

    >>> parse_lead("15"), parse_lead("2h")
    (datetime.timedelta(seconds=900), datetime.timedelta(seconds=7200))
    >>> parse_lead("0")
    Traceback (most recent call last):
    ...
    bot.domain.schedule.ScheduleError: remind=0: from 1 minute to 24 hours before ...
    """
    found = _LEAD.match(text.strip().lower())
    lead = None
    if found is not None:
        number, unit = int(found.group(1)), found.group(2)
        lead = timedelta(hours=number) if unit == "h" else timedelta(minutes=number)
    if lead is None or not MIN_REMIND <= lead <= MAX_REMIND:
        raise ScheduleError(
            f"remind={text[:20]}: from 1 minute to 24 hours before (remind=15m, remind=2h)"
        )
    return lead


def note(schedule: Schedule, now: datetime) -> Timed | None:
    """``The count resumes at 9:00 a.m. (in 10 hours).`` while the time is ahead; None after
    it. "In 10 hours" is a relative moment: Discord and Slack say it relative to the reader's
    now, the other surfaces as it was when worded.

    >>> at = datetime(2021, 4, 9, 14, 0, tzinfo=UTC)
    >>> note(Schedule("b", When.STARTS, at), at) is None
    True
    """
    if schedule.at <= now:
        return None
    return Timed.of(
        f"The count {schedule.kind.value} at",
        Moment(schedule.at, lead=" "),
        Moment(schedule.at, lead=" (", relative=True, words=f"in {until(schedule.at, now)}"),
        ").",
    )


def until(at: datetime, now: datetime) -> str:
    """How long from ``now`` to ``at``, to the minute (up: a reminder never says too long).

    >>> now = datetime(2021, 4, 8, 23, 0, tzinfo=UTC)
    >>> until(now + timedelta(hours=10), now), until(now + timedelta(seconds=899), now)
    ('10 hours', '15 minutes')
    >>> until(now + timedelta(days=2, hours=1), now)
    '2 days 1 hour'
    """
    minutes = -(-int((at - now).total_seconds()) // 60)
    days, minutes = divmod(minutes, 24 * 60)
    if days == 0:
        return duration_words(timedelta(minutes=minutes))
    hours = minutes // 60
    return f"{days} day{'s' if days > 1 else ''}" + (
        f" {duration_words(timedelta(hours=hours))}" if hours else ""
    )


def reminder_headline(schedule: Schedule, now: datetime) -> str:
    """The reminder's headline (its message's title names the count), how long is left counted
    from ``now``: a reminder queued late, after a restart, says how long is really left.

    >>> at = datetime(2021, 4, 9, 14, 0, tzinfo=UTC)
    >>> soon = at - timedelta(minutes=15)
    >>> reminder_headline(Schedule("b", When.RESUMES, at), soon)
    'The count resumes in 15 minutes'
    >>> reminder_headline(Schedule("b", When.RESUMES, at, moved_from=at - timedelta(hours=1)), soon)
    "The count's restart moved: it resumes in 15 minutes"
    """
    soon = f"{schedule.kind.value} in {until(schedule.at, now)}"
    if schedule.moved_from is None:
        return f"The count {soon}"
    return f"The count's {schedule.kind.noun} moved: it {soon}"


def reminder(schedule: Schedule) -> Timed:
    """The reminder's note: when, and (a moved time) when it was to be.

    >>> at = datetime(2021, 4, 9, 14, 0, tzinfo=UTC)
    >>> str(reminder(Schedule("b", When.RESUMES, at, moved_from=at - timedelta(hours=1))))
    'It resumes at 9 Apr 2021 14:00 UTC (it was to resume at 9 Apr 2021 13:00 UTC).'
    """
    verb = "start" if schedule.kind is When.STARTS else "resume"
    parts: list[str | Moment] = [f"It {schedule.kind.value} at", Moment(schedule.at, lead=" ")]
    if schedule.moved_from is not None:
        parts += [Moment(schedule.moved_from, lead=f" (it was to {verb} at "), ")"]
    return Timed.of(*parts, ".")


def reminder_message(count_id: str, title: str, schedule: Schedule, now: datetime) -> Message:
    """The reminder as a message every surface renders: the headline and when (no figures).

    >>> at = datetime(2021, 4, 9, 14, 0, tzinfo=UTC)
    >>> m = reminder_message("b", "Bessemer", Schedule("b", When.STARTS, at), at - MIN_REMIND)
    >>> m.title, m.headline, m.events
    ('Bessemer', 'The count starts in 1 minute', ('reminder',))
    >>> str(m.notes[0])
    'It starts at 9 Apr 2021 14:00 UTC.'
    """
    return Message(
        count_id=count_id,
        title=title,
        seq=0,
        headline=reminder_headline(schedule, now),
        choices=(),
        lines=(),
        footer=Timed.of("Reminder: ", schedule.kind.value),
        significance=Significance.SIGNIFICANT,
        events=(REMINDER,),
        leader=None,
        winner=None,
        final=False,
        notes=(reminder(schedule),),
    )
