"""Filters act when the outbox is planned: over the Bessemer 2021 timeline, each subscription
gets exactly the posts it asked for, a mention only on the clinch and the final, and coalescing
never drops a post a filter selected."""

from __future__ import annotations

import pytest

from bot.commands.hearing import parse_wants
from bot.domain.message import Message
from bot.domain.subscription import ChannelRef, Platform, Subscription
from bot.ingest.pipeline import plan
from bot.store import Database
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryAction
from bot.testing.clock import FakeClock
from tests.helpers import T0, bessemer
from tests.runtime.test_dispatcher import setup
from tests.test_format import bessemer_timeline, replay_messages

EVENTS = [2, 5, 6, 7, 8, 10, 11, 12]
"""Bessemer's significant updates: first results, 25%, the pause, the resumption, 50%, No's
clinch at 1,608, 75%, the final."""

EXPECTED = {
    "events": EVENTS,
    "all": list(range(1, 13)),
    "live": EVENTS,
    "final": [12],
    "calls": [10, 12],
    "leads": [2],
    "final leads": [2, 12],
    # close= adds to events: margins 117 and 148 (the opening 0-0 counts nothing) ...
    "close=150": [2, 3, 5, 6, 7, 8, 10, 11, 12],
    # ... 277 of 727 (38.1%) and 410 of 1,030 (39.8%)
    "close=40%": [2, 4, 5, 6, 7, 8, 10, 11, 12],
    "final close=150": [2, 3, 12],
    "live final": [12],
}


def messages() -> list[Message]:
    return replay_messages(bessemer(), bessemer_timeline())


def subscription(words: str, n: int = 1) -> Subscription:
    channel = ChannelRef(Platform("console"), "local", f"c{n}")
    return Subscription(n, channel, "bessemer-2021", parse_wants(words.split()), "t", T0)


@pytest.mark.parametrize(("words", "seqs"), EXPECTED.items())
def test_each_filter_hears_exactly_its_posts(words: str, seqs: list[int]) -> None:
    sub = subscription(words)
    posted, edited = [], []
    for message in messages():
        for p in plan([sub], message):
            assert p.subscription is sub
            (edited if p.action is DeliveryAction.EDIT_LIVE else posted).append(message.seq)
            if p.action is DeliveryAction.POST and words not in {"all", "events", "live"}:
                assert p.keep, (words, message.seq)  # a filter's post is never coalesced away
    assert posted == seqs
    assert edited == (list(range(1, 13)) if sub.wants.live else [])


def test_routine_posts_that_only_all_took_may_be_coalesced() -> None:
    sub = subscription("all")
    keep = {m.seq: p.keep for m in messages() for p in plan([sub], m)}
    assert [seq for seq, k in keep.items() if not k] == [1, 3, 4, 9]


@pytest.mark.parametrize("words", ["calls mention=@555", "events mention=@555", "all mention=@555"])
def test_a_mention_only_on_the_clinch_and_the_final(words: str) -> None:
    sub = subscription(words)
    pinged = [
        (m.seq, p.message.mention) for m in messages() for p in plan([sub], m) if p.message.mention
    ]
    assert pinged == [(10, "@555"), (12, "@555")]
    routine = [p.message.mention for m in messages() for p in plan([sub], m) if m.seq != 10]
    assert all(x is None for x in routine[:-1])


async def test_through_the_store_nothing_unasked_is_queued_and_nothing_filtered_is_dropped(
    sqlite_db: Database, clock: FakeClock
) -> None:
    """The whole timeline arrives before the dispatcher gets a turn (a channel far behind):
    ``all`` then gets the latest state and every significant update, while every filter still
    gets each post it selected, routine or not."""
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {})
    channels = {}
    async with sqlite_db.begin() as conn:
        for n, words in enumerate(EXPECTED, start=1):
            channel = ChannelRef(Platform("console"), "local", f"c{n}")
            channels[words] = channel
            await sub_rows.subscribe(
                conn, channel, "bessemer-2021", parse_wants(words.split()), by="t", at=T0
            )
    for tally in bessemer_timeline():
        await pipeline.ingest(tally)
    await dispatcher.drain(Platform("console"))
    async with sqlite_db.connect() as conn:
        boards = {s.live_message_id for s in await sub_rows.for_count(conn, "bessemer-2021")}
    for words, channel in channels.items():
        posts = [p for p in adapter.posted if p.channel == channel]
        seqs = [p.content.seq for p in posts if p.message_id not in boards]
        assert all(isinstance(p.content, Message) for p in posts)
        if words == "all":
            assert seqs == EVENTS, words  # routine 1, 3, 4 and 9 superseded by newer posts
        else:
            assert seqs == EXPECTED[words], words
