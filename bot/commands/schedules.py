"""``schedule <count> starts=TIME | resumes=TIME [remind=15m] | clear``: when a count starts or
its pause ends (``bot.domain.schedule``, kept in ``bot.store.schedules``).

Admins of the count only, audited. Without settings it says what is scheduled. A time in the
past, an offset or zone that does not exist, a naive time with no ``[defaults] timezone``, or a
final count is a one-line error and changes nothing.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.commands.args import CountArg, SettingsArg, TextArg
from bot.commands.authority import find_count
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain.message import Timed
from bot.domain.model import Count, CountStatus, TallyState
from bot.domain.schedule import (
    Schedule,
    ScheduleError,
    When,
    note,
    parse_lead,
    parse_when,
)
from bot.domain.words import duration_words
from bot.errors import CommandError
from bot.store import Database
from bot.store import audit as audit_rows
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""

SCHEDULE = Verb.SCHEDULE


@VERBS.verb(
    VerbSpec(
        SCHEDULE,
        "Admins: when a count starts or resumes (starts=, resumes=, remind=, clear)",
        (
            CountArg(),
            SettingsArg(
                ("starts", "resumes", "remind"),
                "starts=2021-04-08T13:00-05:00 or resumes=...; remind=15m before",
            ),
            TextArg("clear", "clear: no scheduled time any more", required=False),
        ),
        admin="schedule a count",
        audits_itself=True,
    )
)
async def schedule(call: Call) -> Reply:
    s, request, command = call.services, call.request, call.command
    assert command.count is not None  # a required CountArg took it
    count = await find_count(s.db, command.count, request)
    settings = dict(command.settings)
    rest = (command.text or "").lower()
    now = s.clock.now()
    if rest not in ("", "clear") or (rest and settings):
        raise CommandError(call.spec.usage_line())
    async with s.db.connect() as conn:
        before = await schedule_rows.get(conn, count.id)
    if not settings and not rest:
        return _shown(count, before, now)
    if rest == "clear":
        async with s.db.begin() as conn:
            await schedule_rows.clear(conn, count.id)
            await audit_rows.record(conn, _entry(call, count, before, None, now))
        return Reply(f"{count.id} has no scheduled time now.")
    await _not_final(s.db, count)
    wanted = schedule_from(count.id, settings, before, s.zone, now)
    async with s.db.begin() as conn:
        stored = await schedule_rows.put(conn, wanted, by=request.actor, at=now)
        await audit_rows.record(conn, _entry(call, count, before, stored, now))
    shown = note(stored, now) or Timed.of("")
    lead = duration_words(stored.lead(s.remind_before))
    text = Timed.of(
        f"Scheduled: {count.id}. ",
        *shown.parts,
        f" Channels that hear remind get a reminder {lead} before.",
    )
    return Reply(str(text), timed=text, ephemeral=False)


def schedule_from(
    count_id: str,
    settings: dict[str, str],
    before: Schedule | None,
    zone: tzinfo | None,
    now: datetime,
) -> Schedule:
    """The schedule ``settings`` ask for (``remind=`` alone changes the lead of ``before``)."""
    given = [k for k in ("starts", "resumes") if k in settings]
    if len(given) > 1:
        raise CommandError("give starts= or resumes=, not both")
    try:
        lead = parse_lead(settings["remind"]) if "remind" in settings else None
        if not given:
            if before is None:
                raise CommandError("nothing is scheduled: give starts= or resumes= first")
            return Schedule(count_id, before.kind, before.at, lead or before.remind_before)
        kind = When(given[0])
        at = parse_when(settings[given[0]], zone, now)
    except ScheduleError as exc:
        raise CommandError(str(exc)) from None
    kept = before.remind_before if before is not None else None
    return Schedule(count_id, kind, at, lead if lead is not None else kept)


async def _not_final(db: Database, count: Count) -> None:
    async with db.connect() as conn:
        last = await tally_rows.last(conn, count.id)
    if count.status is CountStatus.FINAL or (last is not None and last.state is TallyState.FINAL):
        raise CommandError(f"{count.id} is final: a final count is not scheduled")


def _shown(count: Count, before: Schedule | None, now: datetime) -> Reply:
    ahead = None if before is None else note(before, now)
    if ahead is None:
        return Reply(
            f"{count.id} has no scheduled time: schedule {count.id} resumes=2021-04-09T09:00-05:00"
        )
    text = Timed.of(f"{count.id}: ", *ahead.parts)
    return Reply(str(text), timed=text)


def _entry(
    call: Call, count: Count, before: Schedule | None, after: Schedule | None, now: datetime
) -> AuditEntry:
    def said(x: Schedule | None) -> str:
        return "" if x is None else f"{x.kind} {x.at.isoformat()}"

    request = call.request
    detail = "clear" if after is None else f"{after.kind} at {after.at.isoformat()}"
    return AuditEntry(
        now, request.actor, SCHEDULE, count.id, said(before), said(after), True, detail
    )
