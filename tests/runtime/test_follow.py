"""``follow``, ``unfollow`` and ``following`` in the core: a follow hears in subscribe's
grammar (``calls`` by default), its messages go to the person's DM channel through the outbox,
unfollowing cancels what is still queued, a person whom the platform refuses a DM (blocked the
bot) is unfollowed once, and nobody else sees any of it. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from bot.commands.handler import Commands
from bot.commands.request import Inbox, Request
from bot.domain.message import Message
from bot.domain.model import CountStatus
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.errors import CommandError
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus
from bot.testing.clock import FakeClock
from tests.helpers import bessemer
from tests.runtime.test_commands import roomy
from tests.runtime.test_dispatcher import ADMIN, CHAN, headlines, setup
from tests.test_format import bessemer_timeline

CONSOLE = Platform("console")


class Dms(Inbox):
    """A person's DM channel is ``dm-<id>``; ``refuse``: the platform says why there is none."""

    def __init__(self, user_id: str, refuse: str | None = None) -> None:
        self.user_id = user_id
        self.refuse = refuse
        self.opened = 0

    async def open(self) -> str:
        self.opened += 1
        if self.refuse is not None:
            raise CommandError(self.refuse)
        return f"dm-{self.user_id}"


def dm(user_id: str) -> ChannelRef:
    return ChannelRef(CONSOLE, CHAN.workspace, f"dm-{user_id}")


def person(text: str, user_id: str = "7", **kw: Any) -> Request:
    kw.setdefault("inbox", Dms(user_id))
    kw.setdefault("home", True)
    return Request(CHAN, user_id, f"user{user_id}", text, **kw)


@pytest.fixture
async def seeded(db: Database) -> Database:
    async with db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
    return db


def commands(db: Database, clock: FakeClock, pipeline: Pipeline | None = None) -> Commands:
    return Commands(db, pipeline or Pipeline(db, clock), clock, throttle=roomy(clock))


async def test_follow_unfollow_following(seeded: Database, clock: FakeClock) -> None:
    c = commands(seeded, clock)
    reply = await c.handle(person("follow bessemer-2021"))
    assert reply.ok
    assert reply.ephemeral
    assert reply.text == (
        "You follow bessemer-2021: calls (a side clinching, a call withdrawn, the final), by "
        "direct message. (unfollow bessemer-2021 stops it.)"
    )
    again = await c.handle(person("follow bessemer-2021 final close=2%"))
    assert again.text.startswith("You now follow bessemer-2021: the final result and every")
    listed = await c.handle(person("following"))
    assert listed.ephemeral
    assert listed.text == (
        "You follow, by direct message:\n  bessemer-2021: the final result and every update "
        "while the margin is at most 2% (final close=2%)"
    )
    other = await c.handle(person("following", user_id="8"))
    assert other.text.startswith("You follow no count")  # nobody sees another's follows
    gone = await c.handle(person("unfollow bessemer-2021"))
    assert gone.text == "You no longer follow bessemer-2021."
    twice = await c.handle(person("unfollow bessemer-2021"))
    assert not twice.ok
    assert "you do not follow bessemer-2021" in twice.text
    async with seeded.connect() as conn:
        assert (
            await audit_rows.recent(conn, limit=10) == []
        )  # one's own follows are no admin action


@pytest.mark.parametrize(
    ("text", "kw", "words"),
    [
        ("follow bessemer-2021 live", {}, "live, all, mention, thread and pin are for channels"),
        ("follow bessemer-2021 all", {}, "are for channels (subscribe)"),
        ("follow bessemer-2021 thread", {}, "are for channels (subscribe)"),
        ("follow bessemer-2021 loud", {}, "unknown option 'loud'"),
        ("follow bessemer", {}, "unknown count 'bessemer'; did you mean bessemer-2021?"),
        ("follow", {}, "which count? usage: follow <count> [final|calls|leads|events|remind|"),
        ("follow bessemer-2021", {"inbox": None}, "Console has no direct messages"),
        (
            "follow bessemer-2021",
            {"inbox": Dms("7", "start the bot first: https://t.me/tallybot")},
            "start the bot first: https://t.me/tallybot",
        ),
        ("following", {"private_replies": False}, "your follows are shown only to you"),
    ],
)
async def test_bad_follows_get_one_line(
    seeded: Database, clock: FakeClock, text: str, kw: dict[str, Any], words: str
) -> None:
    reply = await commands(seeded, clock).handle(person(text, **kw))
    assert not reply.ok
    assert words in reply.text
    assert "\n" not in reply.text
    async with seeded.connect() as conn:
        assert await follow_rows.of_person(conn, CONSOLE, "7") == []


async def test_a_private_count_of_another_place_cannot_be_followed(
    seeded: Database, clock: FakeClock
) -> None:
    theirs = replace(bessemer(), id="their-vote", owner="console:elsewhere", public=False)
    async with seeded.begin() as conn:
        await count_rows.upsert(conn, theirs)
    reply = await commands(seeded, clock).handle(person("follow their-vote"))
    assert not reply.ok
    assert "unknown count 'their-vote'" in reply.text


async def test_the_most_follows_per_person(
    seeded: Database, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.commands.following.MAX_FOLLOWS", 1)
    async with seeded.begin() as conn:
        await count_rows.upsert(conn, replace(bessemer(), id="second"))
    c = commands(seeded, clock)
    assert (await c.handle(person("follow bessemer-2021"))).ok
    assert (await c.handle(person("follow bessemer-2021 final"))).ok  # a change, not one more
    over = await c.handle(person("follow second"))
    assert not over.ok
    assert "you follow 1 counts, the most there may be" in over.text


async def test_a_follower_gets_calls_by_dm_over_bessemer(
    seeded: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(seeded, clock, {CHAN: Mode.EVENTS})
    c = commands(seeded, clock, pipeline)
    assert (await c.handle(person("follow bessemer-2021", "7"))).ok
    assert (await c.handle(person("follow bessemer-2021 final", "8"))).ok
    for t in bessemer_timeline():
        await pipeline.ingest(t)
        await dispatcher.drain(CONSOLE)
    assert headlines(adapter, dm("7")) == [
        "No union has clinched a majority (unofficial)",
        "Final tally: No union wins, 1,798 to 738",
    ]
    assert headlines(adapter, dm("8")) == ["Final tally: No union wins, 1,798 to 738"]
    assert len(headlines(adapter, CHAN)) == 8  # the channel's posts, unchanged
    async with seeded.connect() as conn:
        count = await count_rows.get(conn, "bessemer-2021")
    assert count is not None
    assert count.status is CountStatus.FINAL
    again = await dispatcher.drain(CONSOLE)
    assert again == 0


async def test_unfollow_cancels_what_is_queued_and_unsubscribe_no_follow(
    seeded: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(seeded, clock, {CHAN: Mode.ALL})
    c = commands(seeded, clock, pipeline)
    assert (await c.handle(person("follow bessemer-2021 events", "7"))).ok
    assert (await c.handle(person("follow bessemer-2021 events", "8"))).ok
    async with seeded.connect() as conn:
        sub = await sub_rows.find(conn, CHAN, "bessemer-2021")
        seven = await follow_rows.find(conn, CONSOLE, "7", "bessemer-2021")
    assert sub is not None
    assert seven is not None
    assert sub.id == seven.id
    timeline = bessemer_timeline()
    await pipeline.ingest(timeline[0])
    await pipeline.ingest(timeline[1])  # first results: queued for all three, not sent
    assert (await c.handle(person("unsubscribe bessemer-2021", "7"))).ok
    assert (await c.handle(person("unfollow bessemer-2021", "8"))).ok
    await dispatcher.drain(CONSOLE)
    assert headlines(adapter, CHAN) == []
    assert headlines(adapter, dm("8")) == []
    assert headlines(adapter, dm("7")) == ["First results: No union leads by 117"]


async def test_a_person_who_blocked_the_bot_is_unfollowed_once(
    seeded: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline, dispatcher, adapter = await setup(seeded, clock, {})
    c = commands(seeded, clock, pipeline)
    assert (await c.handle(person("follow bessemer-2021 events", "7"))).ok
    adapter.gone_channels.add(dm("7"))  # the platform refuses: the bot was blocked
    timeline = bessemer_timeline()
    for t in timeline[:3]:
        await pipeline.ingest(t)  # three DMs queued for the blocked person
    with caplog.at_level(logging.INFO, logger="bot.delivery.worker"):
        await dispatcher.drain(CONSOLE)
        for t in timeline[3:6]:
            await pipeline.ingest(t)
            await dispatcher.drain(CONSOLE)
    said = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
    assert said == ["unfollowed console:7: console:local/dm-7: unknown channel"]
    async with seeded.connect() as conn:
        assert await follow_rows.of_person(conn, CONSOLE, "7") == []
        entries = [e for e in await audit_rows.recent(conn, limit=10) if e.action == "unfollow"]
        statuses = [d.status for d in await outbox.dead(conn) if d.action is DeliveryAction.DIRECT]
    assert len(entries) == 1
    assert entries[0].actor == "tallybot"
    assert statuses == [DeliveryStatus.DEAD]
    assert adapter.messages(ADMIN) == []  # nobody else is told
    assert dispatcher.stats.dead == 1
    assert not [m for m in adapter.messages() if isinstance(m, Message)]


async def test_channels_are_claimed_before_followers(seeded: Database, clock: FakeClock) -> None:
    """A fan-out to followers queued first never keeps a channel's post from being taken."""
    now = clock.now()

    def queued(channel: ChannelRef, action: DeliveryAction) -> outbox.NewDelivery:
        return outbox.NewDelivery(1, channel, "bessemer-2021", 1, action, True, "{}", now)

    async with seeded.begin() as conn:
        dms = [queued(dm(str(i)), DeliveryAction.DIRECT) for i in range(5)]
        await outbox.enqueue(conn, [*dms, queued(CHAN, DeliveryAction.POST)])
        (first,) = await outbox.claimable(conn, CONSOLE, now=now, limit=1)
    assert first.channel == CHAN
    assert first.action is DeliveryAction.POST
