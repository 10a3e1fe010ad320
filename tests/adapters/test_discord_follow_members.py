"""A follow of a server's own private count reaches a member only while they are one, with the
real discord.py against FakeDiscord: ALICE and DAVE follow server A's private count in A; ALICE
leaves A but still shares server B with the bot (so Discord would still take her DMs): the
final is not sent to her, she is unfollowed once (one audit row, one log line), DAVE gets it,
asked about once for both messages (a yes is kept). A public count asks nothing: leaving A
changes nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from tests.adapters.test_discord import ALICE, BOSS, DAVE, World, answer, vt, world
from tests.adapters.test_discord import running as run
from tests.adapters.test_discord_follow import dm_headlines
from tests.adapters.test_discord_tenants import EVE, SECRET, slash_in, tenant_count, two_servers
from tests.fakes.discord_fake.markdown import visible

__all__ = ["vt", "world"]  # the fixtures


def member_asks(world: World, user: int) -> int:
    path = f"/guilds/{world.guild}/members/{user}"
    return len([r for r in world.fake.requests if r.method == "GET" and r.path == path])


@pytest.mark.parametrize("public", [False, True], ids=["private", "public"])
async def test_who_left_the_server_of_a_private_count_is_unfollowed_once(
    tmp_path: Path, world: World, public: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    fake.add_channel(other, "lounge")
    fake.add_member(other, ALICE, "alice")  # B keeps a DM to ALICE possible
    here = world.guild
    async with run(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(here, public=public))
        for user in (ALICE, DAVE):
            made = await slash_in(
                bot, here, world.results, user, "follow", count=SECRET, hears="events"
            )
            assert visible(answer(made).content).startswith(f"You follow {SECRET}")
        fake.remove_member(here, ALICE)
        assert fake.shares_a_server(ALICE)
        with caplog.at_level(logging.INFO):
            for figures in ("yes=20 no=4", "yes=30 no=4"):  # a clinch, then the final
                verb = "update" if figures.startswith("yes=2") else "final"
                ix = await slash_in(bot, here, world.results, BOSS, verb, count=SECRET, **{
                    "figures": figures
                })  # fmt: skip
                assert visible(answer(ix).content).startswith("Accepted")
                await bot.settle()
        async with bot.app.db.connect() as conn:
            left = [f.user_id for f in await follow_rows.for_count(conn, SECRET)]
            entries = await audit_rows.recent(conn, limit=50)
    alice = dm_headlines(bot, ALICE)
    dave = dm_headlines(bot, DAVE)
    assert len(dave) == 2
    unfollowed = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
    unfollows = [e for e in entries if e.action == "unfollow"]
    if public:
        assert alice == dave  # anyone may follow a public count: nothing asked
        assert member_asks(world, ALICE) == member_asks(world, DAVE) == 0
        assert sorted(left) == sorted([str(ALICE), str(DAVE)])
        assert unfollowed == []
        assert unfollows == []
    else:
        assert alice == []
        assert left == [str(DAVE)]
        assert len(unfollowed) == 1, unfollowed
        assert "no longer a member" in unfollowed[0]
        assert len(unfollows) == 1
        assert member_asks(world, ALICE) == 1  # the no is final: not asked again
        assert member_asks(world, DAVE) == 1  # the yes is kept for both messages
    assert fake.count_429 == 0
