"""The adapter contract: what every platform's adapter must do, run against each of them (the
console, Discord, Slack, Telegram and webhooks) with its real client library inside the whole
bot and against its loopback fake (``tests/adapters/rigs``). Per-platform test files keep only
what is specific to one platform.

Every delivery reaches its channel exactly once: when the platform carried out a post but its
answer was lost (a final's chart included), after a server error, and whatever happens to another
channel (removed, failing, or slow: a request the platform never answers): nothing one channel
does stops or delays delivery to the others. An edit of a
message that is gone is ``MessageGone``; a server error is transient, a channel that is gone is
permanent. ``health()`` tells the truth. Text from a count shows as typed and pings nobody.

The console is a terminal: one channel, printed, never read back, and one person typing at one
prompt. It has no answer to lose, no channel to remove and no message to delete; no second
channel for one slow channel to delay (a terminal cannot be slow for some of its members only);
no hundred members typing at once (the prompt reads a command once the last one is answered);
and no rate limit for a reply to draw a 429 from. So the tests of those run on the other four
(``answering``); a kill between send and mark, and the rest, run on all five. A webhook's
receiver has all of those (it deduplicates by the idempotency key, and a message it deleted
answers an edit 410) but no members: the tests of commands run on the chats (``commanded``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select, text

from bot.delivery.adapter import Adapter
from bot.domain.message import Message, Notice
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode
from bot.errors import MessageGone, PermanentDeliveryError, TransientDeliveryError
from bot.ops import readiness
from bot.store import outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import Delivery, DeliveryAction, DeliveryStatus
from bot.store.schema import outbox as outbox_table
from tests.adapters.rigs import Rig
from tests.adapters.rigs.console import ConsoleRig
from tests.adapters.rigs.discord import DiscordRig
from tests.adapters.rigs.slack import SlackRig
from tests.adapters.rigs.telegram import TelegramRig
from tests.adapters.rigs.webhook import WebhookRig
from tests.helpers import tally
from tests.hostile import typed

RIGS: dict[str, type[Rig]] = {
    r.name: r for r in (ConsoleRig, DiscordRig, SlackRig, TelegramRig, WebhookRig)
}
EVERY = list(RIGS)
ANSWERING = ["discord", "slack", "telegram", "webhook"]
"""Platforms that answer a post, have channels to remove and messages to delete, more than one
channel and rate limits (the module docstring)."""
COMMANDED = ["discord", "slack", "telegram"]
"""Platforms whose members type commands, many at once (a webhook's receiver types none)."""
COUNT = "bessemer-2021"


@pytest.fixture(params=EVERY)
def rig(request: pytest.FixtureRequest) -> Rig:
    return RIGS[request.param]()


def answering(test: object) -> object:
    return pytest.mark.parametrize("rig", ANSWERING, indirect=True)(test)


def commanded(test: object) -> object:
    return pytest.mark.parametrize("rig", COMMANDED, indirect=True)(test)


async def subscribe(rig: Rig, *channels: ChannelRef, mode: Mode = Mode.EVENTS) -> None:
    async with rig.app.db.begin() as conn:
        for channel in channels:
            await sub_rows.subscribe(conn, channel, COUNT, mode, by="contract", at=rig.clock.now())


async def ingest(rig: Rig, yes: int, no: int, *, final: bool = False) -> Message:
    state = TallyState.FINAL if final else TallyState.COUNTING
    received = yes + no + 505 if final else 3215  # a final accounts for every ballot
    result = await rig.app.pipeline.ingest(  # fewer received at the final: a correction
        tally(yes, no, challenged=505, received=received, state=state, correction=final)
    )
    assert result.message is not None
    return result.message


def words(text: str) -> str:
    return " ".join(text.split())


def times_shown(rig: Rig, channel: ChannelRef, text: str) -> int:
    """In how many messages the members of ``channel`` see ``text`` (line breaks aside)."""
    return sum(words(text) in words(seen.text) for seen in rig.seen(channel))


async def deliveries(rig: Rig) -> list[Delivery]:
    async with rig.app.db.connect() as conn:
        ids = (await conn.scalars(select(outbox_table.c.id).order_by("id"))).all()
        found = [await outbox.get(conn, i) for i in ids]
    return [d for d in found if d is not None]


def adapter(rig: Rig) -> Adapter:
    return rig.app.adapters[rig.platform]


# ------------------------------------------------------------------------ delivery


async def test_an_update_reaches_its_channel_once(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        await subscribe(rig, channel)
        first = await ingest(rig, 84, 201)
        await rig.settle()
        routine = await ingest(rig, 90, 230)  # not significant: "events" hears nothing
        lead = await ingest(rig, 400, 300)  # the lead changes
        await rig.settle()
        sent = await deliveries(rig)
    assert (first.significant, routine.significant, lead.significant) == (True, False, True)
    assert times_shown(rig, channel, first.headline) == 1
    assert times_shown(rig, channel, routine.headline) == 0
    assert times_shown(rig, channel, lead.headline) == 1
    assert [d.status for d in sent] == [DeliveryStatus.SENT] * 2


async def test_a_final_shows_its_chart_once(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        await subscribe(rig, channel)
        final = await ingest(rig, 738, 1798, final=True)
        await rig.settle()
    (shown,) = [s for s in rig.seen(channel) if words(final.headline) in words(s.text)]
    assert shown.images == 1


@answering
async def test_each_channel_gets_it_once(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        await subscribe(rig, *rig.channels)
        message = await ingest(rig, 84, 201)
        await rig.settle()
        sent = await deliveries(rig)
    assert [times_shown(rig, c, message.headline) for c in rig.channels] == [1, 1]
    ids = {d.channel: d.platform_message_id for d in sent}
    assert ids == {c: rig.seen(c)[0].message_id for c in rig.channels}


@answering
@pytest.mark.parametrize("lost", ["post", "chart"])
async def test_a_post_whose_answer_was_lost_is_shown_once(
    rig: Rig, tmp_path: Path, lost: str
) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        await subscribe(rig, channel)
        rig.lose_next_answer(chart=lost == "chart")
        final = await ingest(rig, 738, 1798, final=True)
        await rig.settle()
        sent, *chart = await deliveries(rig)  # the chart may be a step of its own (Slack)
        apart = adapter(rig).charts_apart
    (shown,) = rig.seen(channel)
    assert times_shown(rig, channel, final.headline) == 1
    assert shown.images == 1
    assert (sent.status, sent.platform_message_id) == (DeliveryStatus.SENT, shown.message_id)
    assert [(c.action, c.status) for c in chart] == (
        [(DeliveryAction.CHART, DeliveryStatus.SENT)] if apart else []
    )


async def shown_after(rig: Rig, channel: ChannelRef, message: Message) -> float:
    """Seconds from queued to shown in ``channel`` of ``message``, on the bot's clock."""
    await rig.wait_until(lambda: times_shown(rig, channel, message.headline) == 1)
    (d,) = [
        d
        for d in await deliveries(rig)
        if d.channel == channel and d.tally_seq == message.seq and d.action is DeliveryAction.POST
    ]
    return (rig.clock.now() - d.created_at).total_seconds()


SLOWNESS = ["a hanging request", "a lost answer", "a 60 s Retry-After"]
HELD_S = 5.0
"""How far the bot's sleeps may move the clock while a channel is slow (``Rig.held``): more
than an update takes to reach a channel right after another (its own pacing, about 1 s), far
less than the slow channel's wait (its 429's 60 s; its request, which hangs until answered)."""


@answering
@pytest.mark.parametrize("slowness", SLOWNESS)
async def test_one_slow_channel_does_not_delay_the_others(
    rig: Rig, tmp_path: Path, slowness: str
) -> None:
    """One channel made slow: the platform never answers its requests, loses the answer to its
    post (the post is carried out: a repair or a confirmed retry follows), or answers its post
    with a 429 on the channel's own bucket, 60 s. Meanwhile updates reach the other channel as
    fast as with no fault, on a clock that the slow channel's waits cannot move (``Rig.held``):
    a worker that waited for the slow channel before claiming more would send the other its
    next update only once the slow one is done, which the held clock never lets happen."""
    async with rig.run(tmp_path):
        slow, other = rig.channels
        await subscribe(rig, slow, other)
        with rig.held(HELD_S):  # no fault: an update right after another, as it should be
            opening = await ingest(rig, 84, 201)
            first = await ingest(rig, 400, 300)
            usual = await shown_after(rig, other, first)
        await rig.settle()
        rig.advance(60)  # every window of every bucket is over
        answer = asyncio.Event()
        if slowness == "a hanging request":
            answer = rig.hang(slow)  # the platform takes its requests, answers none
        elif slowness == "a lost answer":
            rig.lose_next_answer(channel=slow)
        else:
            rig.limit_next_post(slow, retry_after=60)
        with rig.held(HELD_S):
            lead = await ingest(rig, 400, 500)
            await shown_after(rig, other, lead)
            again = await ingest(rig, 900, 500)  # while the slow channel is still slow
            late = await shown_after(rig, other, again)
            behind = times_shown(rig, slow, again.headline)
        answer.set()
        await rig.settle()
    assert late <= usual + 1.0, (usual, late)
    if slowness != "a lost answer":  # (the one made slow by a lost answer may be back already)
        assert behind == 0  # it was slow indeed
    for message in (opening, first, lead, again):  # the slow channel gets each in turn, once
        assert [times_shown(rig, c, message.headline) for c in rig.channels] == [1, 1]


@answering
async def test_server_errors_are_transient_and_retried_to_one_copy(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        rig.fail_next_post()
        with pytest.raises(TransientDeliveryError):
            await adapter(rig).post(channel, Notice("first try"), key="tb-contract-1")
        await subscribe(rig, channel)
        rig.fail_next_post(2)
        message = await ingest(rig, 84, 201)
        await rig.settle()
        (sent,) = await deliveries(rig)
    assert times_shown(rig, channel, "first try") == 0
    assert times_shown(rig, channel, message.headline) == 1
    assert sent.status is DeliveryStatus.SENT


@answering
async def test_a_removed_channel_is_permanent_and_stops_no_other(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        gone, other = rig.channels
        await subscribe(rig, gone, other)
        await rig.remove(gone)
        with pytest.raises(PermanentDeliveryError):
            await adapter(rig).post(gone, Notice("hello?"), key="tb-contract-1")
        first = await ingest(rig, 84, 201)
        await rig.settle()
        lead = await ingest(rig, 400, 300)
        await rig.settle()
        async with rig.app.db.connect() as conn:
            (disabled,) = await sub_rows.for_channel(conn, gone)
    assert not disabled.enabled
    assert disabled.disabled_reason
    assert [times_shown(rig, other, m.headline) for m in (first, lead)] == [1, 1]


@answering
async def test_posts_that_fail_for_a_while_reach_every_channel_once(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        await subscribe(rig, *rig.channels)
        rig.fail_next_post(3)  # the next three posts fail, whichever channel they are for
        first = await ingest(rig, 84, 201)
        await rig.settle()
        sent = await deliveries(rig)
    assert [times_shown(rig, c, first.headline) for c in rig.channels] == [1, 1]
    assert [d.status for d in sent] == [DeliveryStatus.SENT] * 2


@answering
async def test_an_edit_of_a_gone_message_is_message_gone(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        board = await adapter(rig).post(channel, Notice("board"), key="tb-contract-1")
        await adapter(rig).edit(channel, board, Notice("board, edited"))
        await rig.delete(channel, board)
        with pytest.raises(MessageGone):
            await adapter(rig).edit(channel, board, Notice("board, again"))
    assert rig.seen(channel) == []


@answering
async def test_a_deleted_scoreboard_is_posted_anew(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        await ingest(rig, 84, 201)
        await subscribe(rig, channel, mode=Mode.LIVE)
        routine = await ingest(rig, 90, 230)  # not significant: the scoreboard only
        await rig.settle()
        (board,) = rig.seen(channel)
        await rig.delete(channel, board.message_id)
        later = await ingest(rig, 95, 260)
        await rig.settle()
        (new_board,) = rig.seen(channel)
    assert (routine.significant, later.significant) == (False, False)
    assert times_shown(rig, channel, routine.headline) == 0
    assert new_board.message_id != board.message_id
    assert times_shown(rig, channel, later.headline) == 1


# ------------------------------------------------------------------------ health and text


async def readyz_problem(rig: Rig) -> str | None:
    """What ``/readyz`` says of the adapter (None: nothing wrong)."""
    result = await readiness.check(rig.app)
    (check,) = [c for c in result.checks if c.name == f"adapter:{rig.platform}"]
    return check.problem


async def test_health_tells_the_truth(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        assert (await adapter(rig).health()).connected
        assert await readyz_problem(rig) is None
        reason = await rig.take_down()
        health = await adapter(rig).health()
        if reason is None:  # nothing to lose: the console
            assert health.connected
        else:
            assert not health.connected
            assert health.reason is not None
            assert health.reason.startswith(reason)
            assert await readyz_problem(rig) == (await adapter(rig).health()).reason
        if await rig.bring_back():
            assert (await adapter(rig).health()).connected
            assert await readyz_problem(rig) is None


async def test_a_hostile_title_shows_as_typed_and_pings_nobody(rig: Rig, tmp_path: Path) -> None:
    # Discord's, Slack's and Telegram's mentions, within Slack's 150 characters of a header
    title = "@everyone @here <@111111111111111111> <@&222> <!channel> <!here> <!subteam^S1> @alice"
    async with rig.run(tmp_path, title):
        channel = rig.channels[0]
        await subscribe(rig, channel)
        await ingest(rig, 84, 201)
        await rig.settle()
    (shown,) = rig.seen(channel)
    assert words(typed(title)) in words(shown.text)
    assert shown.pings == ()


SENT_FAILS = """
CREATE TRIGGER sent_fails BEFORE UPDATE OF status ON outbox
WHEN NEW.status = 'sent' AND NEW.channel = '{channel}'
BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END
"""


async def test_a_kill_between_send_and_mark_leaves_one_notified_copy(
    rig: Rig, tmp_path: Path
) -> None:
    """The post went out and its answer came back (what the adapter keeps of it written), then
    the bot died before the outbox marked it sent (here: the mark fails, and the bot is
    replaced by a new one with fresh memory, as a kill -9 and a restart do)."""
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        await subscribe(rig, channel)
        async with rig.app.db.begin() as conn:
            await conn.execute(text(SENT_FAILS.format(channel=channel.channel)))
        message = await ingest(rig, 84, 201)
        await rig.app.idle()  # posted; marking it sent failed
        assert times_shown(rig, channel, message.headline) == 1
        await rig.restart()
        async with rig.app.db.begin() as conn:
            await conn.execute(text("DROP TRIGGER sent_fails"))
        await rig.settle()
        (sent,) = await deliveries(rig)
    assert times_shown(rig, channel, message.headline) == 1
    (shown,) = [s for s in rig.seen(channel) if words(message.headline) in words(s.text)]
    assert not shown.quiet  # members were notified of it
    assert sent.status is DeliveryStatus.SENT
    if rig.name != "console":  # a terminal has no message ids
        assert sent.platform_message_id == shown.message_id


@answering
async def test_a_store_error_after_a_post_stops_no_other_and_doubles_nothing(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        failing, other = rig.channels
        await subscribe(rig, failing, other)
        async with rig.app.db.begin() as conn:
            await conn.execute(text(SENT_FAILS.format(channel=failing.channel)))
        first = await ingest(rig, 84, 201)
        await rig.app.idle()  # the post went out; recording it failed
        async with rig.app.db.begin() as conn:
            await conn.execute(text("DROP TRIGGER sent_fails"))
        await rig.settle()
        sent = await deliveries(rig)
    assert [times_shown(rig, c, first.headline) for c in rig.channels] == [1, 1]
    assert [d.status for d in sent] == [DeliveryStatus.SENT] * 2


# ------------------------------------------------------------------------ commands


@commanded
async def test_a_hundred_commands_at_once_are_all_answered(rig: Rig, tmp_path: Path) -> None:
    async with rig.run(tmp_path):
        await ingest(rig, 84, 201)
        await rig.settle()
        asked = await asyncio.gather(
            *(rig.command(rig.channels[i % 2], i, f"status {COUNT}") for i in range(100))
        )
        await rig.wait(lambda: rig.answered(asked) == 100, timeout=120)
    assert rig.answered(asked) == 100


@commanded
async def test_a_reply_that_draws_a_429_is_answered_after_the_wait(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        await ingest(rig, 84, 201)
        await rig.settle()
        said = rig.limit_next_reply(retry_after=45)
        asked_at = rig.clock.monotonic()
        asked = [await rig.command(rig.channels[0], 0, f"status {COUNT}")]
        await rig.wait(lambda: rig.answered(asked) == 1)
        waited = rig.clock.monotonic() - asked_at
    assert waited >= said  # on the bot's clock: the wait was the platform's, not skipped


@commanded
async def test_one_members_commands_are_carried_out_in_the_order_sent(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        channel = rig.channels[0]
        asked = [
            await rig.command(channel, 0, f"subscribe {COUNT}"),
            await rig.command(channel, 0, f"unsubscribe {COUNT}"),
        ]
        await rig.wait(lambda: rig.answered(asked) == 2)
        async with rig.app.db.connect() as conn:
            left = [s for s in await sub_rows.for_channel(conn, channel) if s.enabled]
    assert left == []  # subscribed, then unsubscribed: not the other way round
