"""The answers that read and change nothing: list, status, history, chart and deliveries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from bot.charts.chart import CHART_TALLIES, ChartCache, chart_attachment
from bot.commands.authority import find_count, owns, visible_counts
from bot.commands.request import Reply, Request
from bot.domain import format as fmt
from bot.domain.message import Moment, Part, Timed
from bot.domain.model import Count, Tally, TallyState
from bot.domain.schedule import note as schedule_note
from bot.domain.words import count_of, n
from bot.ingest.sources.health import SourceHealth
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.web.public import PageLink, link_note

log = logging.getLogger(__name__)

Health = Callable[[str], SourceHealth | None]
"""A count's source health by count id (None: not polled)."""


async def list_counts(db: Database, request: Request) -> Reply:
    """``list``: every count, and this channel's subscription to it."""
    counts = [c for c in await visible_counts(db, request) if not c.archived]
    async with db.connect() as conn:
        subs = {s.count_id: s for s in await sub_rows.for_channel(conn, request.channel)}
    if not counts:
        return Reply("No counts here yet: an admin can make one with create.")
    lines = []
    for c in counts:
        sub = subs.get(c.id)
        mark = f" — subscribed ({sub.wants.grammar()})" if sub and sub.enabled else ""
        if sub and not sub.enabled:
            mark = f" — subscription disabled: {sub.disabled_reason}"
        lines.append(f"{c.id}: {c.title} [{c.status}]{mark}")
    return Reply("\n".join(lines))


async def status(
    db: Database,
    health: Health,
    request: Request,
    name: str | None,
    usage: str,
    *,
    now: datetime | None = None,
) -> Reply:
    """``status``: one count's figures (the channel's, or the only one), else a line for each
    (ending in ``usage``); ``now``: to say how long a paused count has been paused."""
    if name is None:
        async with db.connect() as conn:
            subs = await sub_rows.for_channel(conn, request.channel)
        counts = [c for c in await visible_counts(db, request) if not c.archived]
        if len(subs) == 1:
            name = subs[0].count_id
        elif len(counts) == 1:
            name = counts[0].id
        else:
            return await _summary(db, counts, usage)
    count = await find_count(db, name, request)
    async with db.connect() as conn:
        recent = await tally_rows.history(conn, count.id, limit=2)
        scheduled = await schedule_rows.get(conn, count.id)
    last = recent[-1] if recent else None
    before = recent[0] if len(recent) == 2 else None
    seen = checked(health, count.id)
    ahead = None if scheduled is None or now is None else schedule_note(scheduled, now)
    if last is None:
        text = Timed.of(f"{count.title}: no figures yet.")
        for more in (ahead, seen):
            if more is not None:
                text = Timed.of(*text.parts, " ", *more.parts)
        return Reply(str(text), ephemeral=False, timed=text)
    message = fmt.for_status(count, last, now, before)
    if ahead is not None and last.state is not TallyState.FINAL:
        message = replace(message, notes=(*message.notes, ahead))
    if seen is not None:
        message = replace(message, notes=(*message.notes, seen))
    return Reply(message.headline, message=message, ephemeral=False)


async def _summary(db: Database, counts: list[Count], usage: str) -> Reply:
    """``status`` with no count named: one line for each count."""
    if not counts:
        return Reply("No counts here yet: an admin can make one with create.")
    lines = []
    async with db.connect() as conn:
        for c in counts:
            last = await tally_rows.last(conn, c.id)
            now = fmt.for_status(c, last).headline if last else "no figures yet"
            lines.append(f"{c.id} [{c.status}]: {now}")
    return Reply("\n".join([*lines, f"For one count's figures: {usage}"]))


async def with_link(reply: Reply, page_link: PageLink) -> Reply:
    """A one-count ``status`` reply with its public page's link, when it has one."""
    if reply.message is None:
        return reply
    url = await page_link(reply.message.count_id)
    if url is None:
        return reply
    message = replace(reply.message, notes=(*reply.message.notes, link_note(url)))
    return replace(reply, message=message)


def checked(health: Health, count_id: str) -> Timed | None:
    """``Last checked ...; last changed ...; source stale (...)``, the times as values."""
    h = health(count_id)
    if h is None or h.last_checked is None:
        return None
    parts: list[Part] = [Moment(h.last_checked, lead="Last checked ", relative=True)]
    if h.last_changed is not None:
        parts.append(Moment(h.last_changed, lead="; last changed ", relative=True))
    if h.is_stale:
        parts.append(f"; source stale ({h.last_error or 'no good fetch'})")
    return Timed.of(*parts, ".")


async def history(db: Database, count: Count) -> Reply:
    """``history``: the last 15 updates, their times as values: each one's figures worded as
    every message words them, and the headline it was published with."""
    async with db.connect() as conn:
        rows = await tally_rows.history(conn, count.id, limit=15)
    if not rows:
        return Reply(f"{count.id}: no figures yet.")
    last = "the last update" if len(rows) == 1 else f"the last {len(rows)} updates"
    parts: list[Part] = [f"{count.title} — {last}:"]
    for t in rows:
        parts += [f"\n#{t.seq} · ", Moment(t.observed_at), f" · {history_figures(count, t)}"]
        if t.headline:
            parts.append(f" · {t.headline}")
        parts.append(f" (source: {t.source}" + ("; a correction)" if t.correction else ")"))
    text = Timed.of(*parts)
    return Reply(str(text), timed=text)


def history_figures(count: Count, tally: Tally) -> str:
    """One update's figures as the messages word them: ``Yes (RWDSU) 463, No union 1,100;
    505 challenged; 3,215 received; paused``."""
    votes = ", ".join(f"{c.label} {n(tally.votes[c.id])}" for c in count.choices)
    rest = []
    if tally.void:
        rest.append(f"{n(tally.void)} void")
    if tally.challenged:
        rest.append(f"{n(tally.challenged)} challenged")
    if tally.sustained:
        rest.append(f"{count_of(tally.sustained, 'challenge')} sustained")
    if tally.received is not None:
        rest.append(f"{n(tally.received)} received")
    if tally.state is not TallyState.COUNTING:
        rest.append(tally.state.value)
    return "; ".join([votes, *rest])


async def chart(db: Database, charts: ChartCache, count: Count) -> Reply:
    """``chart``: the count's chart as a PNG to show with the reply."""
    async with db.connect() as conn:
        rows = await tally_rows.history(conn, count.id, limit=CHART_TALLIES)
    if not rows:
        return Reply(f"{count.id}: no figures yet.")
    try:
        chart = await chart_attachment(count, rows, cache=charts)
    except Exception as exc:  # the count's place is told too (``ChartCache.failed``)
        log.warning("the chart of %s was not drawn: %s", count.id, exc, exc_info=exc)
        return Reply(f"The chart of {count.id} could not be drawn just now; try again later.")
    return Reply(
        f"Chart of {count.title}, as of update #{rows[-1].seq}.",
        ephemeral=False,
        attachment=chart,
    )


async def deliveries(db: Database, request: Request) -> Reply:
    """``deliveries``: the messages that gave up (DEAD), most recent first, of the counts the
    person's place owns (the operator's admins: the operator's counts)."""
    async with db.connect() as conn:
        mine = {c.id for c in await count_rows.all_counts(conn, archived=True) if owns(request, c)}
        dead = [d for d in await outbox.dead(conn, limit=200) if d.count_id in mine][:20]
    if not dead:
        return Reply("Every message was delivered (nothing gave up).")
    lines = [f"{d.count_id} #{d.tally_seq} to {d.channel}: {d.last_error}" for d in dead]
    return Reply("Messages that could not be delivered:\n" + "\n".join(lines))
