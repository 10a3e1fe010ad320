"""Following a count on Slack, with the real slack_bolt / slack_sdk against FakeSlack (which
grants what the shipped manifest grants: ``im:write`` to open a DM, ``im:history`` to read it):
``follow`` opens the member's DM once (``conversations.open``) and the calls come there;
``following`` and ``unfollow`` answer the member alone; a DM whose answer was lost is there
once (confirmed from the DM's history); a deactivated member is refused at ``follow``; a DM
Slack refuses unfollows once; 100 members following at once are all answered, no 429."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from bot.domain.model import TallyState
from bot.store import audit as audit_rows
from bot.store import follows as follow_rows
from bot.store import outbox
from bot.store.outbox import DeliveryAction, DeliveryStatus
from tests.adapters.test_slack import VirtualTime, bot_posts, config, fake, running, vt
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.manifest import load_manifest
from tests.fakes.slack_fake.markup import visible

__all__ = ["fake", "vt"]  # the fixtures


async def test_follow_following_unfollow(tmp_path: Path, fake: FakeSlack, vt: VirtualTime) -> None:
    news, ada = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        said = await bot.slash("follow bessemer-2021", user=ada, channel=news)
        assert said.body.get("response_type", "ephemeral") == "ephemeral"
        assert visible(said.body["text"]) == (
            "You follow bessemer-2021: calls (a side clinching, a call withdrawn, the final), "
            "by direct message. (unfollow bessemer-2021 stops it.)"
        )
        assert len(fake.calls_to("conversations.open")) == 1
        dm = fake.dm_of(ada)
        assert dm is not None
        await bot.ingest(463, 1100)
        await bot.ingest(738, 1608)  # No clinches
        await bot.settle()
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        posts = bot_posts(fake, dm)
        assert len(posts) == 2
        assert "clinched" in posts[0].text.lower()
        assert "final" in posts[1].text.lower()
        assert bot_posts(fake, news) == []
        listed = await bot.slash("following", user=ada, channel=news)
        assert visible(listed.body["text"]).startswith("You follow, by direct message:")
        gone = await bot.slash("unfollow bessemer-2021", user=ada, channel=news)
        assert visible(gone.body["text"]) == "You no longer follow bessemer-2021."


async def test_a_dm_whose_answer_was_lost_is_there_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news, ada = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("follow bessemer-2021 final", user=ada, channel=news)
        dm = fake.dm_of(ada)
        assert dm is not None
        fake.fail_next("chat.postMessage", drop=True, commit=True)
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        async with bot.app.db.connect() as conn:
            delivery = await outbox.get(conn, 1)
    assert delivery is not None
    assert delivery.action is DeliveryAction.DIRECT
    (posted,) = bot_posts(fake, dm)
    assert delivery.status is DeliveryStatus.SENT
    assert delivery.platform_message_id == posted.ts
    (history,) = fake.calls_to("conversations.history")  # im:history: granted, and read
    assert history.args["channel"] == dm
    assert history.response["ok"] is True


async def test_a_deactivated_member_is_refused_and_a_refused_dm_unfollows_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, caplog: pytest.LogCaptureFixture
) -> None:
    news, ada, bo = fake.add_channel("news"), fake.add_user("ada"), fake.add_user("bo")
    fake.deactivate_user(bo)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        refused = await bot.slash("follow bessemer-2021", user=bo, channel=news)
        assert visible(refused.body["text"]) == (
            "Error: the bot cannot write to you: your Slack account is deactivated"
        )
        await bot.slash("follow bessemer-2021 events", user=ada, channel=news)
        fake.refuse_dm(ada)
        with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
            await bot.ingest(463, 1100)
            await bot.ingest(738, 1608)
            await bot.settle()
            await bot.ingest(738, 1798, state=TallyState.FINAL)
            await bot.settle()
        lines = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
        assert len(lines) == 1
        assert "channel_not_found" in lines[0]
        dm = fake.dm_of(ada)
        tries = [c for c in fake.calls_to("chat.postMessage") if c.args.get("channel") == dm]
        assert len(tries) == 1
        async with bot.app.db.connect() as conn:
            assert await follow_rows.for_count(conn, "bessemer-2021") == []
            entries = await audit_rows.recent(conn, limit=20)
        assert [e.action for e in entries].count("unfollow") == 1


async def test_a_hundred_members_follow_at_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    news = fake.add_channel("news")
    members = [fake.add_user(f"member{i}") for i in range(100)]
    async with running(fake, config(tmp_path, fake), vt) as bot:
        sent = [
            await fake.send_slash_command(
                command="/count", text="follow bessemer-2021 final", user_id=m, channel_id=news
            )
            for m in members
        ]
        assert all(d.acked and not d.late for d in sent)
        urls = {d.response_url for d in sent}
        await fake.wait_for(
            lambda: len({p.url for p in fake.response_url_posts} & urls) == 100, timeout=120
        )
        said = [p for p in fake.response_url_posts if p.url in urls]
        assert all(visible(s.body["text"]).startswith("You follow bessemer-2021") for s in said)
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        dms = [fake.dm_of(m) for m in members]
        assert all(d is not None and len(bot_posts(fake, d)) == 1 for d in dms)
    assert fake.count_429 == 0


async def test_an_app_without_im_write_says_which_scope_to_add(
    tmp_path: Path, vt: VirtualTime
) -> None:
    shipped = load_manifest()
    older = replace(shipped, scopes=shipped.scopes - {"im:write"})  # installed before follows
    async with FakeSlack(clock=vt.monotonic, manifest=older) as fake:
        news, ada = fake.add_channel("news"), fake.add_user("ada")
        async with running(fake, config(tmp_path, fake), vt) as bot:
            said = await bot.slash("follow bessemer-2021", user=ada, channel=news)
        assert visible(said.body["text"]).startswith(
            "Error: opening your DM: missing_scope: the Slack app needs im:write"
        )
        assert fake.dm_of(ada) is None


async def test_a_member_deactivated_later_is_unfollowed_once_and_gets_no_more_dms(
    tmp_path: Path,
    fake: FakeSlack,
    vt: VirtualTime,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Slack still takes posts to a deactivated member's DM: the ``user_change`` event the
    shipped manifest subscribes to ends their follows, not a refused post. Ada, still a member,
    goes on getting hers. (The adapter built by its plug-in, as ``tallybot run`` builds it.)"""
    news, ada, bo = fake.add_channel("news"), fake.add_user("ada"), fake.add_user("bo")
    async with running(fake, config(tmp_path, fake), vt, env=monkeypatch) as bot:
        for member in (ada, bo):
            await bot.slash("follow bessemer-2021 events", user=member, channel=news)
        await bot.ingest(463, 1100)
        await bot.settle()
        with caplog.at_level(logging.WARNING, logger="bot.platform"):
            left = await fake.user_left(bo)
            assert left is not None
            assert left.acked
            for _ in range(1000):  # bolt acks an event, then runs its listener
                if any("unfollowed" in r.getMessage() for r in caplog.records):
                    break
                await bot.app.idle()
            again = await fake.send_event(left.envelope["payload"]["event"])  # Slack's
            assert again.acked  # retry, or the same change told twice: nothing more happens
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        async with bot.app.db.connect() as conn:
            followers = await follow_rows.for_count(conn, "bessemer-2021")
            entries = await audit_rows.recent(conn, limit=20)
    assert [f.user_id for f in followers] == [ada]
    assert [e.detail for e in entries if e.action == "unfollow"] == [
        f"slack:{bo} unfollowed: deactivated in the Slack workspace"
    ]
    assert [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()] == [
        f"unfollowed slack:{bo} from bessemer-2021: deactivated in the Slack workspace"
    ]
    ada_dm, bo_dm = fake.dm_of(ada), fake.dm_of(bo)
    assert ada_dm is not None
    assert bo_dm is not None
    assert len(bot_posts(fake, ada_dm)) == 2  # the first result, then the final
    assert len(bot_posts(fake, bo_dm)) == 1  # the first result only
