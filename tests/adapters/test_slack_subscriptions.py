"""Subscription options on Slack, with the real slack_bolt / slack_sdk against FakeSlack: a user
group pinged (``<!subteam^ID>``) on the clinch and the final only, nothing else ever notifying
anyone; the group named by its id; options Slack has not got refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from bot.domain.model import TallyState
from bot.store.schema import outbox as outbox_table
from tests.adapters.test_slack import VirtualTime, bot_posts, config, fake, running, vt
from tests.fakes.slack_fake import FakeSlack, RecordedSlackMessage
from tests.fakes.slack_fake.markup import visible
from tests.runtime.test_filters import EXPECTED
from tests.test_format import bessemer_timeline

__all__ = ["fake", "vt"]  # the fixtures
GROUP = "S0ORGANISE"


async def test_a_user_group_is_pinged_on_the_clinch_and_the_final_only(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, quiet = fake.add_channel("news"), fake.add_channel("quiet")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        said = await bot.slash(
            f"subscribe bessemer-2021 mention=<!subteam^{GROUP}|@organisers>",
            user=user,
            channel=news,
        )
        assert visible(said.body["text"]) == (
            "Subscribed this channel to bessemer-2021: significant events only; pinging "
            "the user group organisers on calls and the final."
        )
        await bot.slash("subscribe bessemer-2021 all", user=user, channel=quiet)
        listed = await bot.slash("list", user=user, channel=news)
        assert f"subscribed (events mention=@{GROUP})" in visible(listed.body["text"])
        for tally in bessemer_timeline():
            await bot.app.pipeline.ingest(tally)
            await bot.settle()
    posts = bot_posts(fake, news)
    assert len(posts) == 8
    pinged = [p for p in posts if p.pinged]
    assert [p.pinged for p in pinged] == [[f"subteam:{GROUP}"]] * 2
    clinch, final = pinged
    assert "clinched" in clinch.text.lower() or "wins" in clinch.text.lower()
    assert clinch.text.startswith(f"<!subteam^{GROUP}> ")
    assert "final" in final.text.lower()
    assert len(bot_posts(fake, quiet)) == 12
    assert all(p.pinged == [] for p in bot_posts(fake, quiet))


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ("mention=@organisers", "'@organisers' is not a user group id: write mention=@S0123ABCD"),
        ("pin", "pin pins the live scoreboard: add live"),
    ],
)
async def test_what_slack_refuses(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, options: str, error: str
) -> None:
    news = fake.add_channel("news")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        said = await bot.slash(f"subscribe bessemer-2021 {options}", user=user, channel=news)
        assert error in visible(said.body["text"])
        assert said.response_type == "ephemeral"


def shown(fake: FakeSlack, channel: str) -> list[RecordedSlackMessage]:
    """What the channel itself shows: top-level messages and replies also sent to it."""
    return [
        m
        for m in bot_posts(fake, channel)
        if not m.deleted and (m.thread_ts is None or m.broadcast)
    ]


def replies(fake: FakeSlack, channel: str, parent: str) -> list[RecordedSlackMessage]:
    return [m for m in bot_posts(fake, channel) if m.thread_ts == parent and m.ts != parent]


async def test_updates_go_into_the_thread_and_the_final_also_to_the_channel(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake, alerts=(admins,)), vt) as bot:
        said = await bot.slash("subscribe bessemer-2021 thread", user=user, channel=news)
        assert visible(said.body["text"]).endswith(
            "updates in a thread, the final in the channel too."
        )
        for tally in bessemer_timeline():
            await bot.app.pipeline.ingest(tally)
            await bot.settle()
        sub = await bot.subscription(news)
    parent, final = shown(fake, news)
    assert sub.thread_message_id == parent.ts
    assert parent.text.startswith("First results")
    in_thread = replies(fake, news, parent.ts)
    assert len(in_thread) == 7
    assert in_thread[-1] is final
    assert final.broadcast
    assert "No union wins" in final.text
    assert bot_posts(fake, admins) == []


async def test_a_deleted_parent_starts_a_new_thread_and_the_admins_are_told(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake, alerts=(admins,)), vt) as bot:
        await bot.slash("subscribe bessemer-2021 thread", user=user, channel=news)
        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)
        await bot.settle()
        (first,) = shown(fake, news)
        first.deleted = True  # someone deleted the parent
        await bot.ingest(463, 1100)  # resumed: a new parent
        await bot.settle()
        await bot.ingest(560, 1350)  # into the new thread
        await bot.settle()
        sub = await bot.subscription(news)
    (second,) = shown(fake, news)
    assert sub.thread_message_id == second.ts != first.ts
    assert len(replies(fake, news, second.ts)) == 1
    (told,) = bot_posts(fake, admins)
    assert "is gone (deleted?): tallybot started a new thread" in told.text


async def test_the_scoreboard_is_pinned_until_the_final(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake, alerts=(admins,)), vt) as bot:
        await bot.slash("subscribe bessemer-2021 live pin", user=user, channel=news)
        await bot.ingest(84, 201)
        await bot.settle()
        sub = await bot.subscription(news)
        (board,) = [m for m in bot_posts(fake, news) if m.ts == sub.live_message_id]
        assert board.pinned
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
    assert not board.pinned
    assert [c.method for c in fake.calls if c.method.startswith("pins.")] == [
        "pins.add",
        "pins.remove",
    ]
    assert bot_posts(fake, admins) == []


async def test_without_pins_write_the_pin_is_dropped_and_said_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada")
    fake.fail_next("pins.add", status=200, error="missing_scope")
    async with running(fake, config(tmp_path, fake, alerts=(admins,)), vt) as bot:
        await bot.slash("subscribe bessemer-2021 live pin", user=user, channel=news)
        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(463, 1100)
        await bot.settle()
        sub = await bot.subscription(news)
    assert not sub.wants.pin
    assert sub.wants.live
    (told,) = bot_posts(fake, admins)
    assert "may not pin messages" in told.text


async def test_a_ping_whose_answer_was_lost_pings_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash(f"subscribe bessemer-2021 calls mention=@{GROUP}", user=user, channel=news)
        await bot.ingest(560, 1350)  # no call: nothing
        await bot.settle()
        fake.fail_next("chat.postMessage", drop=True, commit=True)  # posted, answer lost
        await bot.ingest(655, 1608)  # the clinch
        await bot.settle()
    (clinch,) = bot_posts(fake, news)
    assert clinch.pinged == [f"subteam:{GROUP}"]
    assert len(fake.calls_to("chat.postMessage")) == 1  # found by the history check
    assert len(fake.calls_to("conversations.history")) == 1


async def test_each_filter_over_the_bessemer_timeline(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    """One channel per filter, the whole count replayed: each channel shows exactly the posts
    its filter selects (the numbers of tests/runtime/test_filters.py)."""
    channels = {words: fake.add_channel(f"c{n}") for n, words in enumerate(EXPECTED)}
    async with running(fake, config(tmp_path, fake), vt) as bot:
        for n, (words, channel) in enumerate(channels.items()):
            user = fake.add_user(f"u{n}")  # one each: a person has 8 commands in 20 s
            await bot.slash(f"subscribe bessemer-2021 {words}", user=user, channel=channel)
        for tally in bessemer_timeline():
            await bot.app.pipeline.ingest(tally)
            await bot.settle()
        boards = {(await bot.subscription(c)).live_message_id for c in channels.values()}
    for words, channel in channels.items():
        posts = [m for m in bot_posts(fake, channel) if m.ts not in boards]
        assert len(posts) == len(EXPECTED[words]), words
        finals = [m for m in posts if "wins" in m.text]
        assert len(finals) == (1 if 12 in EXPECTED[words] else 0), words


async def test_a_live_thread_hangs_under_the_pinned_scoreboard(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake, alerts=(admins,)), vt) as bot:
        await bot.slash("subscribe bessemer-2021 live thread pin", user=user, channel=news)
        await bot.ingest(84, 201)  # the scoreboard, then first results in its thread
        await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)
        await bot.settle()
        sub = await bot.subscription(news)
        (board,) = shown(fake, news)
        assert board.pinned
        assert board.ts == sub.live_message_id
        assert board.edit_count == 1
        in_thread = replies(fake, news, board.ts)
        assert len(in_thread) == 2
        assert in_thread[0].text.startswith("First results")
        board.deleted = True  # the scoreboard and its thread are gone: a new pair
        await bot.ingest(463, 1100)
        await bot.settle()
        sub = await bot.subscription(news)
    (new_board,) = shown(fake, news)
    assert new_board.ts == sub.live_message_id != board.ts
    assert new_board.pinned
    assert len(replies(fake, news, new_board.ts)) == 1
    (told,) = bot_posts(fake, admins)
    assert "started a new thread" in told.text


async def test_a_thread_reply_whose_answer_was_lost_appears_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021 thread", user=user, channel=news)
        await bot.ingest(84, 201)  # the parent
        await bot.settle()
        fake.fail_next("chat.postMessage", drop=True, commit=True)  # replied, answer lost
        await bot.ingest(463, 1100, state=TallyState.PAUSED)
        await bot.settle()
    (parent,) = shown(fake, news)
    assert len(replies(fake, news, parent.ts)) == 1  # found in the thread, not sent again
    (check,) = fake.calls_to("conversations.replies")
    assert check.args["ts"] == parent.ts
    assert len(fake.calls_to("chat.postMessage")) == 2


async def steps(bot: object) -> list[tuple[str, str]]:
    """The outbox, oldest first: each delivery's action and status."""
    app = bot.app  # type: ignore[attr-defined]
    async with app.db.connect() as conn:
        rows = (
            await conn.execute(
                select(outbox_table.c.action, outbox_table.c.status).order_by(outbox_table.c.id)
            )
        ).all()
    return [(str(r.action), str(r.status)) for r in rows]


@pytest.mark.parametrize("fault", ["upload fails", "upload answer lost"])
async def test_a_final_in_the_thread_is_sent_before_its_chart_a_step_of_its_own(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, fault: str
) -> None:
    """The final goes into the thread (and the channel) and is recorded sent as soon as it is
    out; its chart follows as a step of its own (``DeliveryAction.CHART``), into the thread:
    an upload that fails waits alone, and one whose answer was lost is found in the thread,
    not uploaded again."""
    news, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021 thread", user=user, channel=news)
        await bot.ingest(84, 201)  # the parent
        await bot.settle()
        if fault == "upload fails":
            fake.fail_next("files.getUploadURLExternal", status=503)
        else:
            fake.fail_next("files.completeUploadExternal", drop=True, commit=True)
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.app.idle()
        between = await steps(bot)  # the post is out, its chart not yet
        await bot.settle()
        after = await steps(bot)
    assert between[1:] == [("reply", "sent"), ("chart", "pending")]
    assert after[1:] == [("reply", "sent"), ("chart", "sent")]
    (parent, shown_final) = shown(fake, news)
    assert shown_final.broadcast
    assert final.headline in visible(shown_final.text)
    charts = [u for u in fake.uploads if u.channel == news]
    assert [u.thread_ts for u in charts] == [parent.ts]  # once, into the thread
