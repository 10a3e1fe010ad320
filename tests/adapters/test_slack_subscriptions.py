"""Subscription options on Slack, with the real slack_bolt / slack_sdk against FakeSlack: a user
group pinged (``<!subteam^ID>``) on the clinch and the final only, nothing else ever notifying
anyone; the group named by its id; options Slack has not got refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.testing.fakes.slack_fake import FakeSlack
from bot.testing.fakes.slack_fake.markup import visible
from tests.adapters.test_slack import VirtualTime, bot_posts, config, fake, running, vt
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
            f"@{GROUP} on calls and the final."
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
        ("thread", "thread is not supported on Slack; leave it out"),
        ("live pin", "pin is not supported on Slack; leave it out"),
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
