"""Authority and sight stop at a server's edge (issue 15), with the bot in two servers
(FakeDiscord, the real discord.py client): a count that server A owns, private, does not exist
for server B, whose owner has Manage Server there, through every command and autocomplete; A's
own admins run it, A's members do not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from adapters.discord.settings import DiscordSettings
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.domain.subscription import Platform
from bot.settings.loader import Config
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from tests.adapters.test_discord import (
    ALICE,
    BOSS,
    CAROL,
    DAVE,
    Bot,
    World,
    answer,
    answered,
    config,
    opts,
    running,
)
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world
from tests.fakes.discord_fake import FakeInteraction
from tests.fakes.discord_fake.markdown import visible
from tests.hostile import HOSTILE, typed

EVE = 555_555_555_555_555_555  # owns server B, where the bot is too
SECRET = "local-7-strike-vote"


def tenant_count(guild: int, *, public: bool = False) -> Count:
    return Count(
        id=SECRET,
        title="Local 7 strike authorisation",
        choices=(Choice("yes", "Strike"), Choice("no", "No strike")),
        rule=DecisionRule(RuleKind.MAJORITY, "no"),
        status=CountStatus.COUNTING,
        owner=f"discord:{guild}",
        public=public,
    )


def two_servers(tmp_path: Path, world: World, other: int) -> Config:
    cfg = config(tmp_path, world)
    settings: DiscordSettings = cfg.settings("discord")
    settings = settings.model_copy(update={"guilds": (world.guild, other)})
    return replace(cfg, platforms={**cfg.platforms, Platform("discord"): settings})


async def slash_in(
    bot: Bot, guild: int, channel: int, user: int, sub: str, **options: object
) -> FakeInteraction:
    bot.world.vt.advance(6)  # within the command limits (8 in 20 s, a public reply per 5 s)
    ix = await bot.fake.inject_slash_command(
        guild, channel, user, "count", opts(**options), subcommand=sub
    )
    await bot.fake.wait_for(lambda: answered(ix))
    return ix


async def completions(bot: Bot, guild: int, channel: int, user: int, typed: str) -> list[str]:
    ix = await bot.fake.inject_autocomplete(
        guild, channel, user, "count", opts(count=typed), focused="count", subcommand="status"
    )
    await bot.fake.wait_for(lambda: answered(ix))
    assert ix.choices is not None
    return [c["value"] for c in ix.choices]


async def test_another_servers_admin_cannot_see_or_touch_a_private_count(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(world.guild))
        here = world.guild
        ours = await slash_in(
            bot, here, world.results, BOSS, "update", count=SECRET, figures="yes=10 no=4"
        )
        member = await slash_in(bot, here, world.results, ALICE, "pause", count=SECRET)
        theirs = [
            await slash_in(bot, other, lounge, EVE, verb, count=SECRET, **extra)
            for verb, extra in [
                ("update", {"figures": "yes=1 no=99"}),
                ("correct", {"figures": "yes=1 no=2"}),
                ("pause", {}),
                ("final", {"figures": "yes=10 no=4"}),
                ("edit", {"settings": "public=yes"}),
                ("archive", {}),
                ("delete", {"confirm": "confirm"}),
                ("admins", {"action": "add", "who": f"<@{EVE}>"}),
                ("subscribe", {}),
                ("status", {}),
                ("history", {}),
                ("chart", {}),
            ]
        ]
        typo = await slash_in(bot, other, lounge, EVE, "status", count="no-such-count")
        listed = await slash_in(bot, other, lounge, EVE, "list")
        summary = await slash_in(bot, other, lounge, EVE, "status")
        seen_there = await completions(bot, other, lounge, EVE, "local")
        seen_all_there = await completions(bot, other, lounge, EVE, "")
        seen_here = await completions(bot, here, world.results, ALICE, "local")
        async with bot.app.db.connect() as conn:
            history = await tally_rows.history(conn, SECRET)
            subs = await sub_rows.for_count(conn, SECRET)
            audit = list(reversed(await audit_rows.recent(conn)))
            still = await count_rows.get(conn, SECRET)

    assert answer(ours).content.startswith(f"Accepted update #1 for {SECRET}")
    refused = answer(member).content
    assert refused.startswith("Error: only admins of the server that owns local-7-strike-vote")
    # From server B the count does not exist: the very answer a typo gets, naming nothing.
    unknown = answer(typo).content
    assert unknown.startswith("Error: unknown count 'no-such-count'")
    for ix in theirs:
        shown = answer(ix)
        assert shown.ephemeral
        assert shown.content == unknown.replace("no-such-count", SECRET)
        assert SECRET not in unknown
        assert "Strike" not in shown.content
    assert SECRET not in answer(listed).content
    assert "Local 7" not in answer(summary).content
    assert seen_there == []
    assert SECRET not in seen_all_there
    assert seen_here == [SECRET]
    assert [(t.seq, t.votes["yes"]) for t in history] == [(1, 10)]  # nothing from server B
    assert subs == []
    assert still == tenant_count(world.guild)  # not edited, archived or deleted
    # Every admin attempt is audited, the cross-server ones with what they aimed at.
    attempts = [(a.actor.split(" ")[0], a.action, a.allowed) for a in audit]
    assert attempts == [
        (f"discord:{BOSS}", "update", True),
        (f"discord:{ALICE}", "pause", False),
        (f"discord:{EVE}", "update", False),
        (f"discord:{EVE}", "correct", False),
        (f"discord:{EVE}", "pause", False),
        (f"discord:{EVE}", "final", False),
        (f"discord:{EVE}", "edit", False),
        (f"discord:{EVE}", "archive", False),
        (f"discord:{EVE}", "delete", False),
        (f"discord:{EVE}", "admins", False),
    ]
    assert audit[-1].detail == f"refused: {SECRET} is a private count of discord:{world.guild}"


async def test_a_public_count_is_followed_from_another_server_but_run_only_by_its_own(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(world.guild, public=True))
        followed = await slash_in(bot, other, lounge, EVE, "subscribe", count=SECRET)
        pushed = await slash_in(
            bot, other, lounge, EVE, "update", count=SECRET, figures="yes=1 no=99"
        )
        seen = await completions(bot, other, lounge, EVE, "local")
    assert answer(followed).content.startswith(f"Subscribed this channel to {SECRET}")
    assert answer(pushed).content.startswith(
        "Error: only admins of the server that owns local-7-strike-vote can update figures"
    )
    assert seen == [SECRET]


async def test_subscribing_a_channel_takes_manage_channels(tmp_path: Path, world: World) -> None:
    gus = 777_777_777_777_777_777
    world.fake.add_member(world.guild, gus, "gus")  # no permissions of note
    async with running(world, config(tmp_path, world)) as bot:
        refused = await slash_in(
            bot, world.guild, world.results, gus, "subscribe", count="bessemer-2021"
        )
        allowed = await slash_in(
            bot, world.guild, world.results, ALICE, "subscribe", count="bessemer-2021"
        )
    assert answer(refused).content == (
        "Error: only members who may manage this channel can subscribe it; ask one of them"
    )
    assert answer(allowed).content.startswith("Subscribed this channel to bessemer-2021")


async def test_grants_add_admins_inside_the_owning_server_only(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    fake.add_member(world.guild, EVE, "eve")  # a plain member of server A too
    here, results = world.guild, world.results
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(here))
        before = await slash_in(bot, here, results, CAROL, "pause", count=SECRET)
        by_member = await slash_in(
            bot, here, results, ALICE, "admins", action="add", count=SECRET, who=f"<@{ALICE}>"
        )
        added = [
            await slash_in(bot, here, results, BOSS, "admins", action="add", count=SECRET, who=w)
            for w in (f"<@&{world.admin_role}>", f"<@{EVE}>")
        ]
        listed = await slash_in(bot, here, results, CAROL, "admins", action="list", count=SECRET)
        by_role = await slash_in(bot, here, results, CAROL, "pause", count=SECRET)
        from_b = await slash_in(bot, other, lounge, EVE, "resume", count=SECRET)
        from_a = await slash_in(bot, here, results, EVE, "resume", count=SECRET)
        removed = await slash_in(
            bot, here, results, BOSS, "admins", action="remove", count=SECRET, who=f"<@{EVE}>"
        )
        after = await slash_in(bot, here, results, EVE, "pause", count=SECRET)
        async with bot.app.db.connect() as conn:
            audit = [(a.action, a.allowed) for a in reversed(await audit_rows.recent(conn))]

    assert answer(before).content.startswith("Error: only admins of the server that owns")
    assert answer(by_member).content.startswith("Error: only admins of the server that owns")
    # Names, not ids (issue 28, part 4): plain text, and the replies ping nobody.
    assert [answer(ix).content for ix in added] == [
        f"the role count-admins now administers {SECRET}.",
        f"eve now administers {SECRET}.",
    ]
    assert answer(listed).content == (
        f"{SECRET} is also administered by: eve, the role count-admins"
    )
    assert [(answer(ix).mentions, answer(ix).mention_roles) for ix in [*added, listed]] == [
        ([], [])
    ] * 3
    assert answer(by_role).content.startswith(f"Accepted update #1 for {SECRET}")
    assert answer(from_b).content == f"Error: unknown count '{SECRET}'"  # not from server B
    assert answer(from_a).content.startswith(f"Accepted update #2 for {SECRET}")
    assert answer(removed).content == f"eve no longer administers {SECRET}."
    assert answer(after).content.startswith("Error: only admins of the server that owns")
    assert audit == [
        ("pause", False),
        ("admins", False),
        ("admins", True),
        ("admins", True),
        ("admins", True),
        ("pause", True),
        ("resume", False),
        ("resume", True),
        ("admins", True),
        ("pause", False),
    ]


async def test_a_server_admin_makes_a_count_with_the_slash_command(
    tmp_path: Path, world: World
) -> None:
    here, results = world.guild, world.results
    settings = 'choices=yes:Strike,no:"No strike" tie=no received=412'
    async with running(world, config(tmp_path, world)) as bot:
        made = await slash_in(
            bot, here, results, BOSS, "create", count="local-7", settings=settings,
            title="Local 7 strike vote",
        )  # fmt: skip
        by_member = await slash_in(
            bot, here, results, ALICE, "create", count="local-8", settings=settings, title="x"
        )
        followed = await slash_in(bot, here, results, ALICE, "subscribe", count="local-7")
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    assert answer(made).content.startswith("Created local-7: Local 7 strike vote;")
    assert answer(by_member).content.startswith("Error: only admins can create a count")
    assert answer(followed).content.startswith("Subscribed this channel to local-7")
    assert count is not None
    assert (count.owner, count.title, count.received) == (
        f"discord:{here}",
        "Local 7 strike vote",
        412,
    )
    assert count.choices == (Choice("yes", "Strike"), Choice("no", "No strike"))


async def dm(bot: Bot, user: int, sub: str, **options: object) -> FakeInteraction:
    """``/count sub`` typed in the user's DM with the bot: Discord does not offer the
    guild-only ``/count`` there, so this is what the bot makes of a request it should not get
    (a user install, a changed command tree)."""
    bot.world.vt.advance(6)
    here = bot.fake.dm_channel(user)
    ix = await bot.fake.inject_slash_command(
        None, here, user, "count", opts(**options), subcommand=sub, allow_guild_only=True
    )
    await bot.fake.wait_for(lambda: answered(ix))
    return ix


async def test_each_dm_is_a_place_of_its_own(tmp_path: Path, world: World) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)  # a stranger: shares no server with anyone here
    settings = "choices=yes:Yes,no:No"
    async with running(world, config(tmp_path, world)) as bot:
        made = await dm(bot, DAVE, "create", count="dm-secret", title="Mine", settings=settings)
        updated = await dm(bot, DAVE, "update", count="dm-secret", figures="yes=3 no=1")
        by_stranger = await dm(bot, EVE, "create", count="eve-own", title="x", settings=settings)
        seen = [
            await dm(bot, EVE, verb, count="dm-secret", **extra)
            for verb, extra in [("status", {}), ("history", {}), ("pause", {})]
        ]
        listed = await dm(bot, EVE, "list")
        summary = await dm(bot, EVE, "status")
        typo = await dm(bot, EVE, "status", count="no-such-count")
        bot.world.vt.advance(6)
        typed = await fake.inject_autocomplete(
            None, fake.dm_channel(EVE), EVE, "count", opts(count="dm"), subcommand="status",
            focused="count", allow_guild_only=True,
        )  # fmt: skip
        await fake.wait_for(lambda: answered(typed))
        in_server = await slash_in(bot, world.guild, world.results, ALICE, "status", count="dm")
        own = await dm(bot, DAVE, "status", count="dm-secret")
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "dm-secret")
    assert answer(made).content.startswith("Created dm-secret: Mine;")
    assert answer(updated).content.startswith("Accepted update #1 for dm-secret")
    assert count is not None
    assert count.owner == f"discord:@{fake.dm_channel(DAVE)}"
    assert answer(by_stranger).content.startswith("Error: only admins can create a count")
    unknown = answer(typo).content
    for ix in seen:
        assert answer(ix).content == unknown.replace("no-such-count", "dm-secret")
    assert "dm-secret" not in answer(listed).content
    assert "Mine" not in answer(summary).content
    assert typed.choices == []
    assert answer(in_server).content.startswith("Error: unknown count 'dm'")
    assert "dm-secret" not in answer(in_server).content
    assert "Mine" in str(answer(own).embeds) + answer(own).content


async def test_a_hostile_member_name_is_shown_as_typed_and_pings_nobody(
    tmp_path: Path, world: World
) -> None:
    """Issue 28, part 4: a reply names a member by their display name, whatever it holds."""
    fake, here, results = world.fake, world.guild, world.results
    evil = fake.add_user(HOSTILE[1])
    fake.add_member(here, evil, HOSTILE[1])
    async with running(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(here))
        added = await slash_in(
            bot, here, results, BOSS, "admins", action="add", count=SECRET, who=f"<@{evil}>"
        )
    said = answer(added)
    assert visible(said.content) == typed(f"{HOSTILE[1]} now administers {SECRET}.")
    assert (said.mentions, said.mention_roles, said.mention_everyone) == ([], [], False)
