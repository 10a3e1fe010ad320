"""Abusive commands on Slack (FakeSlack, the real slack_bolt client): every command gets an
answer, a flood is answered privately, and nothing of it reaches the channel but one reply."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.commands.inflight import BUSY, FLOOR, Backlog
from bot.store import counts, tallies
from tests.adapters.test_slack import VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.records import SocketDelivery

FLOOD = 200
STATUS = "status bessemer-2021"


async def test_two_hundred_status_commands_at_once_get_one_public_answer(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel, member = fake.add_channel("general"), fake.add_user("bo")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.ingest(84, 201)
        deliveries = await asyncio.gather(
            *(
                fake.send_slash_command(
                    command="/count",
                    text="status bessemer-2021",
                    user_id=member,
                    channel_id=channel,
                )
                for _ in range(FLOOD)
            )
        )
        # past what it could finish before a stop, a command is answered busy in its ack
        # (bot.commands.inflight.Backlog): answered, not carried out
        busy = [d for d in deliveries if (d.ack_payload or {}).get("text") == BUSY.text]
        taken = [d for d in deliveries if d not in busy]
        await fake.wait_for(lambda: len(fake.response_url_posts) == len(taken), timeout=30)

    assert all(d.acked and not d.late for d in deliveries)
    assert len(taken) >= FLOOR
    posts = fake.response_url_posts
    assert {p.url for p in posts} == {d.response_url for d in taken}  # one answer each
    assert [p.response_type for p in posts].count("in_channel") == 1
    answered = [p for p in posts if p.body["text"] == "No union leads by 117"]
    slowed = [p for p in posts if p.body["text"].startswith("Slow down: at most 8 commands")]
    assert (len(answered), len(slowed)) == (8, len(taken) - 8)
    assert [m.source for m in fake.messages(channel)] == ["response_url"]


async def test_a_figure_of_4301_digits_gets_an_answer(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    """int() refuses more than 4,300 digits with ValueError, which escaped the adapter: bolt
    logged "Failed to run listener function" and the member got no reply at all."""
    channel = fake.add_channel("general")
    admin = fake.add_user("ada", is_admin=True)
    huge = "9" * 4301
    async with running(fake, config(tmp_path, fake), vt) as bot:
        for who in (admin, fake.add_user("bo")):
            answer = await bot.slash(
                f"update bessemer-2021 yes={huge} no=1", user=who, channel=channel
            )
            assert answer.response_type == "ephemeral"
            assert answer.body["text"].startswith("Error: ")
        async with bot.app.db.connect() as conn:
            assert await tallies.last(conn, "bessemer-2021") is None


async def test_a_flood_from_one_workspace_gets_no_command_of_another_answered_busy(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    """200 members of one workspace type at once, and 5 of another just after: the flood fills
    what the bot takes (nothing finished yet: the floor), but the other workspace's commands are
    carried out and answered, none "busy" (each place has room of its own)."""
    frozen = Backlog(monotonic=lambda: 0.0)  # no pace measured: the floor
    other = fake.add_workspace("elsewhere")
    flooded = fake.add_channel("general")
    members = [fake.add_user(f"m{i}") for i in range(FLOOD)]
    quiet = fake.add_channel("elsewhere-general", team_id=other)
    theirs = [fake.add_user(f"o{i}", team_id=other) for i in range(5)]

    def status(user: str, channel: str) -> Coroutine[Any, Any, SocketDelivery]:
        return fake.send_slash_command(
            command="/count", text=STATUS, user_id=user, channel_id=channel
        )

    async with running(fake, config(tmp_path, fake), vt, backlog=frozen) as bot:
        async with bot.app.db.begin() as conn:  # the other workspace may follow it too
            count = await counts.get(conn, "bessemer-2021")
            assert count is not None
            await counts.upsert(conn, replace(count, public=True))
        await bot.ingest(84, 201)
        flood = [asyncio.ensure_future(status(m, flooded)) for m in members]
        await fake.wait_for(lambda: frozen.open >= FLOOR, timeout=30)  # the flood fills it
        asked = await asyncio.gather(*(status(u, quiet) for u in theirs))
        assert [d.ack_payload for d in asked] == [None] * 5  # taken: acked without an answer
        flooding = await asyncio.gather(*flood)
        urls = {d.response_url for d in asked}
        await fake.wait_for(lambda: urls <= {p.url for p in fake.response_url_posts}, timeout=30)

    assert all(d.acked and not d.late for d in flooding)
    answers = [p.body["text"] for p in fake.response_url_posts if p.url in urls]
    assert answers == ["No union leads by 117"] * 5
