"""A burst of Slack commands just after start: every member gets tallybot's answer.

bolt's own single-workspace authorization calls auth.test for every request that arrives
before its first auth.test has answered, and shows its generic ":warning: We apologize..." to
whoever's request drew a 429 from it. The adapter authorizes requests from the auth.test it
makes once when it opens (``adapters.slack.oauth.StoreAuthorize``), so a burst calls auth.test
no more."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.adapters.test_slack import VirtualTime, config, running
from tests.fakes.slack_fake import FakeSlack

BURST = 100
"""(Within the commands always taken at once, ``bot.commands.inflight.FLOOR``.)"""


@pytest.mark.timeout(120)
async def test_a_burst_of_commands_at_start_calls_auth_test_once_and_gets_answers(
    tmp_path: Path,
) -> None:
    vt = VirtualTime()
    async with FakeSlack(clock=vt.monotonic) as fake:
        channels = [fake.add_channel(f"room-{i}") for i in range(BURST)]
        users = [fake.add_user(f"member{i}") for i in range(BURST)]
        async with running(fake, config(tmp_path, fake), vt):
            asked = await asyncio.gather(
                *(
                    fake.send_slash_command(
                        command="/count", text="help", user_id=users[i], channel_id=channels[i]
                    )
                    for i in range(BURST)
                )
            )
            urls = {a.response_url for a in asked}
            await fake.wait_for(
                lambda: urls <= {p.url for p in fake.response_url_posts}, timeout=60
            )
        said = [p.body.get("text", "") for p in fake.response_url_posts if p.url in urls]
        acked = [a.ack_payload for a in asked if a.ack_payload]
    assert len(fake.calls_to("auth.test")) == 1  # the adapter's own, on opening
    assert len(said) == BURST
    assert not [t for t in said if "apologize" in t]
    assert not [p for p in acked if "apologize" in str(p)]
