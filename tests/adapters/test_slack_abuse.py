"""Abusive commands on Slack (FakeSlack, the real slack_bolt client): every command gets an
answer, a flood is answered privately, and nothing of it reaches the channel but one reply."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.commands.inflight import BUSY, FLOOR
from bot.store import tallies
from bot.testing.fakes.slack_fake import FakeSlack
from tests.adapters.test_slack import VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt

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
