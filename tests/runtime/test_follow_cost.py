"""What a follower's direct message costs: a fan-out of a final to many followers asks the
store, per DM, only to note its attempt and to record it sent (each one statement, shared by
the DMs written at the same time: ``bot.store.group_commit``); whether a private count's
follower must still be a member of its place comes with the claim (``Delivery.member``), not
from a query per DM; and a person unfollowed for blocking the bot costs no attempt of their
other DMs in hand. On SQLite and PostgreSQL, through the real dispatcher and store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.domain.message import Outgoing
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Hear, Platform, Wants
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store.outbox import NewDelivery
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.cluster.test_poll_cost import statements
from tests.helpers import bessemer, tally
from tests.runtime.test_dispatcher import CHAN, setup
from tests.runtime.test_follow import dm
from tests.test_format import bessemer_timeline

CONSOLE = Platform("console")
FINAL = tally(738, 1798, challenged=505, void=174, state=TallyState.FINAL)
CLAIMS = 20
"""The statements of the drain that are not per DM: its claims (the fan-out's, and the last
that finds nothing more) and the fan-out's summary."""


class Tried(RecordingAdapter):
    """Records, besides, every post attempted (``render`` comes first, refused or not)."""

    def __init__(self) -> None:
        super().__init__()
        self.tried: list[ChannelRef] = []

    def render(self, channel: ChannelRef, content: Outgoing) -> None:
        self.tried.append(channel)


async def follow_final(db: Database, clock: FakeClock, n: int, *, public: bool) -> None:
    count = replace(bessemer(), owner="console:local", public=public)
    async with db.begin() as conn:
        await count_rows.upsert(conn, count)
        for i in range(n):
            await follow_rows.follow(
                conn, CHAN, str(i), count.id, Wants(frozenset({Hear.FINAL})),
                inbox=dm(str(i)).channel, at=clock.now(),
            )  # fmt: skip


@pytest.mark.parametrize("public", [False, True], ids=["private", "public"])
async def test_a_dm_costs_its_note_and_its_record(
    db: Database, clock: FakeClock, public: bool
) -> None:
    n = 40
    await follow_final(db, clock, n, public=public)
    pipeline, dispatcher, adapter = await setup(db, clock, {})
    await pipeline.ingest(FINAL)
    with statements() as sent:
        await dispatcher.drain(CONSOLE)
    assert sorted(p.channel.channel for p in adapter.posted) == sorted(
        dm(str(i)).channel for i in range(n)
    )
    # a member of the count's own place, asked about by the platform, only if it is private
    assert {p.channel.member for p in adapter.posted} == (
        {None} if public else {str(i) for i in range(n)}
    )
    # Each DM: a note and a record at most (one statement each), each in a transaction of its
    # own at worst, whose BEGIN is a statement on SQLite. Before: a member query of its own
    # per DM, a note in two statements, and a claim at every DM sent (SQLite 302, PG 110).
    per_dm = 4 if db.dialect_name == "sqlite" else 2
    assert len(sent) <= per_dm * n + CLAIMS, "\n".join(sent)
    assert [s for s in sent if s.startswith("SELECT follows")] == []  # no member query


async def test_who_blocked_the_bot_is_not_tried_again_for_the_dms_in_hand(
    db: Database, clock: FakeClock
) -> None:
    """Three DMs claimed together for a person who blocked the bot: the first is refused, they
    are unfollowed (their other DMs cancelled with the follow), and the other two are dropped
    without an attempt (before: each waited for its turn and noted its attempt in vain)."""
    await follow_final(db, clock, 0, public=True)
    pipeline, dispatcher, adapter = await setup(db, clock, {}, adapter=Tried())
    assert isinstance(adapter, Tried)
    async with db.begin() as conn:
        await follow_rows.follow(
            conn, CHAN, "7", "bessemer-2021", Wants(frozenset({Hear.EVENTS})),
            inbox=dm("7").channel, at=clock.now(),
        )  # fmt: skip
    adapter.gone_channels.add(dm("7"))
    for t in bessemer_timeline()[:3]:
        await pipeline.ingest(t)  # first results: one DM
    async with db.begin() as conn:
        (first,) = await outbox.due(conn, CONSOLE, now=clock.now(), limit=50)
        d = first
        more = [NewDelivery(
            d.subscription_id, d.channel, d.count_id, d.tally_seq, d.action, d.significant,
            d.payload, d.created_at,
        )] * 2  # fmt: skip
        await outbox.enqueue(conn, more)  # two more of theirs, queued behind it
    await dispatcher.drain(CONSOLE)
    assert adapter.tried == [dm("7")]
    assert dispatcher.stats.dead == 1
    assert dispatcher.stats.cancelled == 2
    async with db.connect() as conn:
        assert await follow_rows.of_person(conn, CONSOLE, "7") == []
