"""The ledger in the store (``StoreLedger`` on ``Context.sent_ledger``), on SQLite and PostgreSQL:
a *restarted* adapter (fresh memory, same store) finds the copy a kill left between the answer
and the outbox's mark without a request, repairs a post whose answer was lost and whose repair
was cut short to one notified copy, and probes a first post only above what the chat showed
it; without a store the same restart has nothing to stop at."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from adapters.telegram.render import render
from adapters.telegram.settings import BOT_TOKEN, TelegramSettings
from bot.commands.request import Reply, Request
from bot.commands.throttle import Throttle
from bot.domain.message import Notice
from bot.errors import TransientDeliveryError
from bot.platform import ChannelRef, Context, Platform
from bot.settings.secrets import Secret
from bot.store import Database
from bot.store.sent_ledger import Copy, Doubt, Known
from bot.testing.clock import FakeClock
from tests.adapters.telegram.conftest import shown
from tests.fakes.telegram_fake import FakeTelegram, FloodLimits
from tests.fakes.telegram_fake.testing import loopback_session

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter

BOARD = Notice("Yes 10 · No 7")
FINAL = Notice("Final: Yes 463 · No 1100")
KEY = "final-1"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(limits=FloodLimits(chat_burst=50, group_per_min=None)) as f:
        yield f


async def _unused(request: Request) -> Reply:
    raise AssertionError("no command is handled here")


@asynccontextmanager
async def adapter(fake: FakeTelegram, store: Database | None) -> AsyncIterator[TelegramAdapter]:
    """A Telegram adapter with fresh memory: what a restarted process builds."""
    from adapters.telegram.adapter import TelegramAdapter

    clock = FakeClock()
    context = Context(
        handle=_unused,
        clock=clock,
        throttle=Throttle(clock),
        secrets={BOT_TOKEN: Secret(BOT_TOKEN, fake.token)},
        store=store,
    )
    built = TelegramAdapter(
        TelegramSettings(api_base=fake.base_url), context, session=loopback_session()
    )
    try:
        yield built
    finally:
        await built.bot.session.close()


async def test_a_kill_after_the_answer_before_the_outbox_mark_leaves_the_one_copy(
    fake: FakeTelegram, db: Database
) -> None:
    """The exact interleaving of a kill -9: sent, answered, the ledger written, the outbox not
    marked yet, killed. The restarted adapter finds the delivery in doubt, and the ledger
    knows its copy: kept as it is, with its notification, and no request at all."""
    group = fake.add_group("Union hall")
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    async with adapter(fake, db) as first:
        assert await first.post(channel, BOARD, key="board-1") == "1"
        assert await first.post(channel, FINAL, key=KEY) == "2"  # then killed: not marked
    before = len(fake.requests)
    async with adapter(fake, db) as second:
        since = datetime(2026, 1, 1, tzinfo=UTC)
        assert await second.find_posted(channel, [KEY], since=since) == {}  # in doubt
        assert await second.post(channel, FINAL, key=KEY) == "2"
    assert len(fake.requests) == before
    assert [m.message_id for m in fake.visible(group)] == [1, 2]
    assert not fake.visible(group)[1].disable_notification


async def test_a_restarted_adapter_repairs_to_one_copy(fake: FakeTelegram, db: Database) -> None:
    from adapters.telegram.once import StoreLedger

    group = fake.add_group("Union hall")
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    async with adapter(fake, db) as first:
        assert isinstance(first.ledger, StoreLedger)
        assert await first.post(channel, BOARD, key="board-1") == "1"
        fake.lose_answer("sendMessage")
        fake.fail_next("editMessageText", status=502)  # the repair's probe: then "killed"
        with pytest.raises(TransientDeliveryError):
            await first.post(channel, FINAL, key=KEY)
    assert len(fake.visible(group)) == 3  # the board and two copies of the final

    async with adapter(fake, db) as second:  # fresh memory, the same store
        known = await second.ledger.known(group.id, KEY)
        assert known.doubt == Doubt(1, blind=False)
        assert known.copies == (Copy(3, silent=True),)
        since = datetime(2026, 1, 1, tzinfo=UTC)
        assert await second.find_posted(channel, [KEY], since=since) == {}
        kept = await second.post(channel, FINAL, key=KEY)

    assert kept == "2"  # the lost send, with its notification; the silent copies are gone
    assert [m.message_id for m in fake.visible(group)] == [1, 2]
    assert "Final" in shown(fake.visible(group)[1])
    assert "Yes 10" in shown(fake.visible(group)[0])  # the board is untouched, not probed
    assert not fake.visible(group)[1].disable_notification
    assert {m.message_id for m in fake.messages(group) if m.deleted} == {3, 4}
    async with adapter(fake, db) as third:
        assert await third.ledger.known(group.id, KEY) == Known(
            2, (Copy(2, False),), None, frozenset({1})
        )


async def test_a_lost_silent_send_ends_in_one_notified_copy(
    fake: FakeTelegram, db: Database
) -> None:
    """Both the post's and the repair's answers lost, then a restart: the silent copy shows
    the post's quiet text, so the probe tells it from the notified original, which stays;
    nothing is sent again with a notification (members are notified once)."""
    group = fake.add_group("Union hall")
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    async with adapter(fake, db) as first:
        await first.post(channel, BOARD, key="board-1")
        fake.lose_answer("sendMessage", times=2)
        with pytest.raises(TransientDeliveryError):
            await first.post(channel, FINAL, key=KEY)
    async with adapter(fake, db) as second:
        await second.find_posted(channel, [KEY], since=datetime(2026, 1, 1, tzinfo=UTC))
        kept = await second.post(channel, FINAL, key=KEY)
    assert [m.message_id for m in fake.visible(group)] == [1, int(kept)] == [1, 2]
    assert not fake.visible(group)[1].disable_notification
    assert {m.message_id for m in fake.messages(group) if m.deleted} == {3, 4}
    finals = [m for m in fake.messages(group) if m.message_id > 1]
    assert [m.message_id for m in finals if not m.disable_notification] == [2]


async def test_a_first_post_is_probed_only_above_what_the_chat_showed_the_bot(
    fake: FakeTelegram, db: Database
) -> None:
    """The first post to a chat, its answer lost: the probe stops at the reply the ledger
    noted (the subscribe command's answer), not 50 ids down."""
    from adapters.telegram.send import Outgoing

    alice = fake.add_user("Alice")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    for i in range(30):
        fake.user_says(group, alice, f"before the bot {i}")
    async with adapter(fake, db) as first:
        reply = await first.sender.send(group.id, Outgoing(render(Notice("Subscribed"))))
        await first.ledger.note_other(group.id, reply)  # what TelegramCommands does
        fake.user_says(group, alice, "thanks")
        fake.lose_answer("sendMessage")
        posted = await first.post(channel, FINAL, key=KEY)
    probes = [r for r in fake.calls_to("editMessageText")]
    assert len(probes) == 2  # "thanks" and the lost post; nothing at or below the reply
    assert [m.message_id for m in fake.visible(group) if m.source == "sendMessage"] == [
        reply, int(posted),
    ]  # fmt: skip


async def test_a_command_reply_noted_before_a_restart_is_not_probed(
    fake: FakeTelegram, db: Database
) -> None:
    from adapters.telegram.send import Outgoing

    group = fake.add_group("Union hall")
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    async with adapter(fake, db) as first:
        await first.post(channel, BOARD, key="board-1")
        reply = await first.sender.send(group.id, Outgoing(render(Notice("Subscribed"))))
        await first.ledger.note_other(group.id, reply)  # what TelegramCommands does
        fake.lose_answer("sendMessage")
        fake.fail_next("editMessageText", status=502)
        with pytest.raises(TransientDeliveryError):
            await first.post(channel, FINAL, key=KEY)
    async with adapter(fake, db) as second:
        assert (await second.ledger.known(group.id, KEY)).others == {1, 2}
        await second.find_posted(channel, [KEY], since=datetime(2026, 1, 1, tzinfo=UTC))
        assert await second.post(channel, FINAL, key=KEY) == "3"
    assert shown(fake.visible(group)[1]).endswith("Subscribed")
    assert fake.visible(group)[1].revisions == []  # never probed
    assert [m.message_id for m in fake.visible(group)] == [1, 2, 3]


async def test_without_a_store_a_restart_forgets_where_to_stop(fake: FakeTelegram) -> None:
    """The contrast: a restarted adapter with no store has no ``L``, so its probe runs on past
    the copies, into the board, which it overwrites with the final (and cleans up as a copy)."""
    from adapters.telegram.once import MemoryLedger

    group = fake.add_group("Union hall")
    channel = ChannelRef(Platform("telegram"), str(group.id), str(group.id))
    async with adapter(fake, None) as first:
        assert isinstance(first.ledger, MemoryLedger)
        await first.post(channel, BOARD, key="board-1")
        fake.lose_answer("sendMessage", times=2)
        with pytest.raises(TransientDeliveryError):
            await first.post(channel, FINAL, key=KEY)
    async with adapter(fake, None) as second:
        await second.find_posted(channel, [KEY], since=datetime(2026, 1, 1, tzinfo=UTC))
        await second.post(channel, FINAL, key=KEY)
    assert not any("Yes 10" in shown(m) for m in fake.visible(group))  # the board is lost
