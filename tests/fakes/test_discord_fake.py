"""The fake Discord, exercised with the real discord.py client and CommandTree."""

from __future__ import annotations

import asyncio
import io
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.discord_fake import FakeDiscord, FakeInteraction, RecordedRequest
from tests.fakes.loopback.limits import real_time_and

with warnings.catch_warnings():
    # discord.player imports audioop, deprecated since 3.11; filterwarnings=error would fail.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    from discord import app_commands

TOKEN = "fake-token"
ALICE = 111_111_111_111_111_111


class Bot(discord.Client):
    def __init__(self, **options: Any) -> None:
        super().__init__(
            intents=options.pop("intents", discord.Intents.default()),
            guild_ready_timeout=0.05,
            **options,
        )
        self.tree = app_commands.CommandTree(self)


@dataclass
class World:
    fake: FakeDiscord
    clock: FakeClock
    guild_id: int
    channel_id: int


@pytest.fixture
async def world(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    """A fake with one guild, one text channel and one human member; discord.py points at it
    for the duration of the test (Route.BASE and DEFAULT_GATEWAY are restored afterwards)."""
    clock = FakeClock()
    options: dict[str, Any] = {"channel_msg_limit": 3, "channel_msg_window_s": 0.3}
    options.update(getattr(request, "param", {}))
    old_base, old_gateway = (
        discord.http.Route.BASE,
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY,
    )
    async with FakeDiscord(token=TOKEN, clock=real_time_and(clock), **options) as fake:
        guild_id = fake.add_guild("Count HQ")
        channel_id = fake.add_channel(guild_id, "results")
        fake.add_member(guild_id, ALICE, "alice")
        with fake.patch_discord_py():
            assert fake.base_url == discord.http.Route.BASE
            yield World(fake, clock, guild_id, channel_id)
    assert old_base == discord.http.Route.BASE
    assert old_gateway == discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY


async def start(client: discord.Client, token: str = TOKEN) -> asyncio.Task[None]:
    """Log in and connect; return the connection task once discord.py says it is ready.
    On failure the client is closed (no leaked sessions) and the error re-raised."""
    try:
        await client.login(token)
    except BaseException:
        await client.close()
        raise
    task = asyncio.create_task(client.connect(reconnect=False))
    ready = asyncio.create_task(client.wait_until_ready())
    done, _ = await asyncio.wait({task, ready}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    if ready in done:
        return task
    ready.cancel()
    await client.close()
    await asyncio.gather(ready, return_exceptions=True)
    await task  # raises the connection error, if there was one
    raise AssertionError("discord.py did not become ready")


@pytest.fixture
async def bot(world: World) -> AsyncIterator[Bot]:
    client = Bot()
    task = await start(client)
    try:
        yield client
    finally:
        await client.close()
        await task


def text_channel(bot: Bot, world: World) -> discord.TextChannel:
    channel = bot.get_channel(world.channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


def posts(world: World) -> list[RecordedRequest]:
    return [r for r in world.fake.requests if r.method == "POST" and r.path.endswith("/messages")]


# --------------------------------------------------------------------- login


async def test_login_ready_and_guild_available(world: World) -> None:
    client = Bot()
    available: list[int] = []

    @client.event
    async def on_guild_available(guild: discord.Guild) -> None:
        available.append(guild.id)

    task = await start(client)
    try:
        fake = world.fake
        assert client.user is not None
        assert client.user.id == fake.bot_user_id
        assert client.user.bot
        assert client.application_id == fake.app_id
        guild = client.get_guild(world.guild_id)
        assert guild is not None
        assert guild.name == "Count HQ"
        assert not guild.unavailable
        assert available == [world.guild_id]
        assert [c.name for c in guild.text_channels] == ["results"]
        assert guild.me is not None
        assert guild.me.id == fake.bot_user_id
        assert guild.member_count == 2  # the bot and alice
        assert text_channel(client, world).permissions_for(guild.me).send_messages
        paths = [(r.method, r.path, r.status) for r in fake.requests]
        assert paths[:2] == [
            ("GET", "/users/@me", 200),
            ("GET", "/oauth2/applications/@me", 200),
        ]
        identify = next(p for p in fake.gateway.received if p["op"] == 2)
        assert identify["d"]["token"] == TOKEN
        sent = [p.get("t") for p in fake.gateway.sent if p["op"] == 0]
        assert sent[:2] == ["READY", "GUILD_CREATE"]
        seqs = [p["s"] for p in fake.gateway.sent if p["op"] == 0]
        assert seqs == sorted(seqs)
        assert len(set(seqs)) == len(seqs)
        assert fake.ready_event.is_set()
    finally:
        await client.close()
        await task


async def test_bad_token_is_refused(world: World) -> None:
    with pytest.raises(discord.LoginFailure):
        await start(Bot(), "wrong-token")
    assert world.fake.requests[-1].status == 401
    assert world.fake.count_invalid == 1


async def test_privileged_intent_not_enabled_closes_gateway(world: World) -> None:
    client = Bot(intents=discord.Intents.all())
    await client.login(TOKEN)
    try:
        with pytest.raises(discord.PrivilegedIntentsRequired):
            await asyncio.wait_for(client.connect(), 5)
    finally:
        await client.close()
    assert world.fake.gateway.close_codes == [4014]


async def test_json_content_type_is_exact_and_unknown_routes_are_loud(world: World) -> None:
    headers = {"Authorization": f"Bot {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.get(world.fake.base_url + "/users/@me") as resp:
            assert resp.headers["Content-Type"] == "application/json"
            assert resp.headers["X-RateLimit-Bucket"]
            assert resp.headers["Via"] == "1.1 google"
        async with session.get(world.fake.base_url + "/no/such/route") as resp:
            assert resp.status == 404
            assert await resp.json() == {"message": "404: Not Found", "code": 0}


# ------------------------------------------------------------------ messages


async def test_send_records_content_embeds_nonce_and_mentions(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    embed = discord.Embed(title="Bessemer", description="Yes 738 / No 1798")
    embed.add_field(name="Turnout", value="55%")
    quiet = await channel.send(
        f"Update for <@{ALICE}>",
        embed=embed,
        nonce="count-1",
        allowed_mentions=discord.AllowedMentions.none(),
    )
    loud = await channel.send(f"Ping <@{ALICE}>")

    first, second = world.fake.messages(world.channel_id)
    assert quiet.id == first.id
    assert loud.id == second.id
    assert first.content == f"Update for <@{ALICE}>"
    assert first.embeds[0]["title"] == "Bessemer"
    assert first.embeds[0]["fields"] == [{"name": "Turnout", "value": "55%", "inline": True}]
    assert first.nonce == "count-1"
    assert first.allowed_mentions == {"parse": []}
    assert first.mentions == []
    assert quiet.mentions == []
    assert second.mentions == [ALICE]
    assert [u.id for u in loud.mentions] == [ALICE]
    assert isinstance(second.nonce, str)  # discord.py always sends a nonce...
    assert posts(world)[1].json["enforce_nonce"] is True  # ...and asks for dedup
    assert posts(world)[1].response_headers["X-RateLimit-Limit"] == "3"


async def test_oversize_embed_is_rejected_with_50035(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    with pytest.raises(discord.HTTPException) as too_long:
        await channel.send(embed=discord.Embed(description="x" * 4097))
    assert too_long.value.status == 400
    assert too_long.value.code == 50035
    errors = posts(world)[-1].response["errors"]
    assert errors["embeds"]["0"]["description"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"

    three = [discord.Embed(description="y" * 2500) for _ in range(3)]  # each fine, 7500 total
    with pytest.raises(discord.HTTPException) as too_big:
        await channel.send(embeds=three)
    assert too_big.value.code == 50035
    assert "MAX_EMBED_SIZE_EXCEEDED" in str(posts(world)[-1].response)

    with pytest.raises(discord.HTTPException) as too_much:
        await channel.send("z" * 2001)
    assert too_much.value.code == 50035
    assert world.fake.messages(world.channel_id) == []


async def test_edit_delete_and_fetch(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    message = await channel.send("Yes 10 / No 4")
    edited = await message.edit(content="Yes 12 / No 4")
    assert edited.edited_at is not None
    recorded = world.fake.message(message.id)
    assert recorded.content == "Yes 12 / No 4"
    assert recorded.edited
    assert [e["content"] for e in recorded.edits] == ["Yes 12 / No 4"]
    fetched = await channel.fetch_message(message.id)
    assert fetched.content == "Yes 12 / No 4"
    await message.delete()
    assert recorded.deleted
    with pytest.raises(discord.NotFound) as gone:
        await channel.fetch_message(message.id)
    assert gone.value.code == 10008


async def test_attachment_is_uploaded_as_multipart(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    png = b"\x89PNG" + bytes(1230)
    message = await channel.send("chart", file=discord.File(io.BytesIO(png), "chart.png"))
    (recorded,) = world.fake.messages(world.channel_id)
    (attachment,) = recorded.attachments
    assert (attachment.filename, attachment.size) == ("chart.png", 1234)
    assert posts(world)[-1].json["attachments"] == [{"id": 0, "filename": "chart.png"}]
    assert await message.attachments[0].read() == png


async def test_a_client_killed_mid_upload_is_not_a_fault_of_the_fake(world: World) -> None:
    """A kill -9 while a chart is being uploaded cuts the body short: the fake answers nothing,
    makes no post and records the request as 499, rather than failing the test as its own bug."""
    host, port = world.fake.base_url.split("//")[1].split("/")[0].split(":")
    path = f"/api/v10/channels/{world.channel_id}/messages"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bot {TOKEN}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
        '--b\r\nContent-Disposition: form-data; name="files[0]"; filename="c.png"\r\n\r\n'
    )
    _, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.encode() + bytes(1000))
    await writer.drain()
    writer.close()  # the fake has the head and part of the body, then the connection's end
    await writer.wait_closed()
    await world.fake.wait_for(lambda: [r.status for r in posts(world)] == [499])
    assert world.fake.internal_errors == []
    assert world.fake.messages(world.channel_id) == []


async def test_burst_is_paced_by_the_rate_limit_headers(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    contents = [f"update {i}" for i in range(7)]
    await asyncio.gather(*(channel.send(c) for c in contents))
    assert sorted(m.content for m in world.fake.messages(world.channel_id)) == sorted(contents)
    assert world.fake.count_429 == 0  # discord.py waited out Remaining: 0 on its own
    times = sorted(r.time for r in posts(world))
    assert times[-1] - times[0] >= 0.6  # 7 sends at 3 per 0.3 s need three windows


async def test_burst_beyond_shared_bucket_gets_429s_and_every_message_once(
    world: World, bot: Bot
) -> None:
    # Another process with the same token has just used up the channel's bucket.
    url = f"{world.fake.base_url}/channels/{world.channel_id}/messages"
    async with aiohttp.ClientSession(headers={"Authorization": f"Bot {TOKEN}"}) as other:
        for i in range(3):
            async with other.post(url, json={"content": f"other {i}"}) as resp:
                assert resp.status == 200
    channel = text_channel(bot, world)
    contents = [f"update {i}" for i in range(7)]
    await asyncio.gather(*(channel.send(c) for c in contents))

    got = [m.content for m in world.fake.messages(world.channel_id)]
    assert sorted(got) == sorted(contents + [f"other {i}" for i in range(3)])
    assert world.fake.count_429 >= 1
    limited = [r for r in posts(world) if r.status == 429]
    assert len(limited) == world.fake.count_429
    assert limited[0].response["global"] is False
    assert limited[0].response["retry_after"] > 0
    assert limited[0].response_headers["X-RateLimit-Scope"] == "user"
    assert limited[0].response_headers["Via"] == "1.1 google"


@pytest.mark.parametrize(
    "world", [{"global_limit_per_s": 4, "global_window_s": 0.2}], indirect=True
)
async def test_global_limit_429s_are_retried(world: World, bot: Bot) -> None:
    ids = [world.fake.add_channel(world.guild_id, f"c{i}") for i in range(6)]
    # Separate channels, separate buckets: only the global limit binds.
    await asyncio.gather(*(bot.get_partial_messageable(i).send("hi") for i in ids))
    assert all(len(world.fake.messages(i)) == 1 for i in ids)
    limited = [r for r in world.fake.requests if r.status == 429]
    assert limited
    assert all(r.response["global"] for r in limited)
    assert limited[0].response_headers["X-RateLimit-Global"] == "true"


async def test_lost_response_retry_is_deduplicated_by_nonce(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    # The message is created but the answer is lost: discord.py retries a 502 after 1 s.
    world.fake.fail_next(r"^/channels/\d+/messages$", 502, after_commit=True)
    message = await channel.send("Yes 738 / No 1798")
    (recorded,) = world.fake.messages(world.channel_id)
    assert recorded.id == message.id
    first, second = posts(world)
    assert (first.status, second.status) == (502, 200)
    assert first.json["nonce"] == second.json["nonce"]

    nonce = recorded.nonce
    assert isinstance(nonce, str)
    again = await channel.send("Yes 738 / No 1798", nonce=nonce)
    assert again.id == recorded.id
    assert len(world.fake.messages(world.channel_id)) == 1
    world.clock.advance(world.fake.nonce_window_s + 1)
    later = await channel.send("Yes 738 / No 1798", nonce=nonce)
    assert later.id != recorded.id
    assert len(world.fake.messages(world.channel_id)) == 2


async def test_injected_503_is_raised(world: World, bot: Bot) -> None:
    world.fake.fail_next(r"/messages$", 503)
    with pytest.raises(discord.DiscordServerError):
        await text_channel(bot, world).send("hello")
    assert world.fake.messages(world.channel_id) == []


async def test_deleted_channel_raises_not_found_10003(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    deleted = asyncio.create_task(bot.wait_for("guild_channel_delete", timeout=5))
    world.fake.delete_channel(world.channel_id)
    assert (await deleted).id == world.channel_id
    assert bot.get_channel(world.channel_id) is None
    with pytest.raises(discord.NotFound) as exc:
        await channel.send("too late")
    assert exc.value.code == 10003


async def test_revoked_send_raises_forbidden_50013(world: World, bot: Bot) -> None:
    channel = text_channel(bot, world)
    updated = asyncio.create_task(bot.wait_for("guild_channel_update", timeout=5))
    world.fake.revoke_send(world.channel_id)
    _, after = await updated
    assert isinstance(after, discord.TextChannel)
    assert not after.permissions_for(after.guild.me).send_messages
    with pytest.raises(discord.Forbidden) as exc:
        await channel.send("nope")
    assert exc.value.code == 50013
    assert exc.value.status == 403


async def test_gateway_drop_is_resumed(world: World, bot: Bot) -> None:
    resumed = asyncio.create_task(bot.wait_for("resumed", timeout=5))
    await world.fake.disconnect_gateway()
    await resumed
    assert world.fake.gateway.resume_count == 1
    assert world.fake.gateway.identify_count == 1
    created = asyncio.create_task(bot.wait_for("guild_channel_create", timeout=5))
    new_id = world.fake.add_channel(world.guild_id, "after-resume")
    assert (await created).id == new_id


# -------------------------------------------------------------- interactions


async def sync_guild(bot: Bot, world: World) -> None:
    guild = discord.Object(world.guild_id)
    bot.tree.copy_global_to(guild=guild)
    synced = await bot.tree.sync(guild=guild)
    assert {c.name for c in synced} == {
        c["name"] for c in world.fake.registered_commands[world.guild_id]
    }


async def test_slash_command_ephemeral_reply(world: World, bot: Bot) -> None:
    seen: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()

    @bot.tree.command(description="Show a count")
    async def tally(interaction: discord.Interaction, count: str, round: int = 1) -> None:
        seen.set_result((count, interaction.user.id))
        await interaction.response.send_message(f"{count} round {round}", ephemeral=True)

    await sync_guild(bot, world)
    (registered,) = world.fake.registered_commands[world.guild_id]
    assert [o["name"] for o in registered["options"]] == ["count", "round"]

    ix = await world.fake.inject_slash_command(
        world.guild_id, world.channel_id, ALICE, "tally", [{"name": "count", "value": "bessemer"}]
    )
    response = await ix.wait_response()
    assert await seen == ("bessemer", ALICE)
    assert (response.type, response.flags, response.status) == (4, 64, 200)
    assert ix.original is not None
    assert ix.original.ephemeral
    assert ix.original.content == "bessemer round 1"
    assert world.fake.messages(world.channel_id) == []  # ephemeral: not in the channel


async def test_defer_then_followup_and_edit(world: World, bot: Bot) -> None:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @bot.tree.command(description="Slow count")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send("Yes 738")
        chart = discord.File(io.BytesIO(b"png" * 100), "chart.png")
        second = await interaction.followup.send("No 1798", file=chart, wait=True)
        await second.edit(content="No 1799")
        await interaction.edit_original_response(content="Yes 739")
        original = await interaction.original_response()
        assert original.content == "Yes 739"
        done.set_result(None)

    await sync_guild(bot, world)
    ix = await world.fake.inject_slash_command(world.guild_id, world.channel_id, ALICE, "slow", [])
    await asyncio.wait_for(done, 5)
    assert [c.type for c in ix.callbacks] == [5]
    assert ix.original is not None
    assert ix.followups[0] is ix.original
    assert ix.original.content == "Yes 739"
    assert not ix.original.flags & 128
    assert [e["content"] for e in ix.edits] == ["Yes 739"]
    contents = [m.content for m in world.fake.messages(world.channel_id)]
    assert contents == ["Yes 739", "No 1799"]
    assert ix.followups[1].edited
    (chart,) = ix.followups[1].attachments
    assert (chart.filename, chart.size) == ("chart.png", 300)

    world.clock.advance(15 * 60 + 1)  # the interaction token has expired
    url = f"{world.fake.base_url}/webhooks/{world.fake.app_id}/{ix.token}?wait=true"
    async with aiohttp.ClientSession() as session, session.post(url, json={"content": "late"}) as r:
        assert r.status == 401
        assert (await r.json())["code"] == 50027


async def test_late_callback_gets_10062(world: World, bot: Bot) -> None:
    gate = asyncio.Event()
    outcome: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    @bot.tree.command(description="Count")
    async def count(interaction: discord.Interaction) -> None:
        await gate.wait()
        try:
            await interaction.response.send_message("too slow")
        except discord.HTTPException as exc:
            outcome.set_result(exc)

    @count.error
    async def count_error(interaction: discord.Interaction, error: Exception) -> None:
        outcome.set_exception(error)

    await sync_guild(bot, world)
    ix = await world.fake.inject_slash_command(world.guild_id, world.channel_id, ALICE, "count", [])
    world.clock.advance(3.5)
    gate.set()
    error = await asyncio.wait_for(outcome, 5)
    assert isinstance(error, discord.NotFound)
    assert error.code == 10062
    assert (ix.callbacks[0].status, ix.callbacks[0].error_code) == (404, 10062)
    assert ix.response is None
    assert ix.original is None
    assert world.fake.messages(world.channel_id) == []


async def test_second_callback_is_refused_with_40060(world: World, bot: Bot) -> None:
    @bot.tree.command(description="Hello")
    async def hello(interaction: discord.Interaction) -> None:
        chart = discord.File(io.BytesIO(b"\x89PNG" * 10), "chart.png")
        await interaction.response.send_message("hi", file=chart)

    await sync_guild(bot, world)
    ix: FakeInteraction = await world.fake.inject_slash_command(
        world.guild_id, world.channel_id, ALICE, "hello", []
    )
    await ix.wait_response()
    url = f"{world.fake.base_url}/interactions/{ix.id}/{ix.token}/callback"
    again = {"type": 4, "data": {"content": "again"}}
    async with aiohttp.ClientSession() as session, session.post(url, json=again) as resp:
        assert resp.status == 400
        assert (await resp.json())["code"] == 40060
    assert [c.status for c in ix.callbacks] == [200, 400]
    assert [m.content for m in world.fake.messages(world.channel_id)] == ["hi"]
    assert ix.original is not None
    assert [(a.filename, a.size) for a in ix.original.attachments] == [("chart.png", 40)]
    assert ix.callbacks[0].data is not None
    assert ix.callbacks[0].data["attachments"] == [{"id": 0, "filename": "chart.png"}]


async def test_autocomplete_choices_are_recorded(world: World, bot: Bot) -> None:
    async def polls(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        names = ["bessemer", "bhm1", "staten-island"]
        return [app_commands.Choice(name=n, value=n) for n in names if n.startswith(current)]

    @bot.tree.command(description="Show a poll")
    @app_commands.autocomplete(poll=polls)
    async def show(interaction: discord.Interaction, poll: str) -> None:
        await interaction.response.send_message(poll)

    await sync_guild(bot, world)
    ix = await world.fake.inject_autocomplete(
        world.guild_id,
        world.channel_id,
        ALICE,
        "show",
        [{"name": "poll", "value": "b"}],
        focused="poll",
    )
    response = await ix.wait_response()
    assert response.type == 8
    assert ix.choices == [
        {"name": "bessemer", "value": "bessemer"},
        {"name": "bhm1", "value": "bhm1"},
    ]


async def test_unregistered_command_is_not_injected(world: World, bot: Bot) -> None:
    with pytest.raises(LookupError):
        await world.fake.inject_slash_command(world.guild_id, world.channel_id, ALICE, "nope", [])


async def test_button_click_updates_the_message(world: World, bot: Bot) -> None:
    clicked: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Vote(discord.ui.View):
        @discord.ui.button(label="Yes", custom_id="vote:yes")
        async def yes(
            self, interaction: discord.Interaction, button: discord.ui.Button[Any]
        ) -> None:
            await interaction.response.edit_message(content="Yes 1 / No 0")
            clicked.set_result(interaction.user.id)

    message = await text_channel(bot, world).send("Yes 0 / No 0", view=Vote(timeout=None))
    recorded = world.fake.message(message.id)
    assert recorded.components[0]["components"][0]["custom_id"] == "vote:yes"
    ix = await world.fake.inject_component(
        world.guild_id, world.channel_id, ALICE, message.id, "vote:yes"
    )
    assert await asyncio.wait_for(clicked, 5) == ALICE
    response = await ix.wait_response()
    assert response.type == 7
    assert recorded.content == "Yes 1 / No 0"
    assert recorded.edited


async def test_global_commands_and_direct_messages(world: World, bot: Bot) -> None:
    @bot.tree.command(description="Help")
    async def help(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("help")

    await bot.tree.sync()
    assert [c["name"] for c in world.fake.registered_commands[None]] == ["help"]
    ix = await world.fake.inject_slash_command(world.guild_id, world.channel_id, ALICE, "help", [])
    assert (await ix.wait_response()).type == 4

    alice = await bot.fetch_user(ALICE)
    dm = await alice.send("Your count is in")
    assert isinstance(dm.channel, discord.DMChannel)
    assert [m.content for m in world.fake.messages(dm.channel.id)] == ["Your count is in"]


async def test_wait_for_times_out(world: World) -> None:
    with pytest.raises(TimeoutError):
        await world.fake.wait_for(lambda: False, timeout=0.05)


async def test_ephemeral_defer_keeps_the_answer_private(world: World, bot: Bot) -> None:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @bot.tree.command(description="Private count")
    async def mine(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send("Only you: Yes 3")
        done.set_result(None)

    await sync_guild(bot, world)
    ix = await world.fake.inject_slash_command(world.guild_id, world.channel_id, ALICE, "mine", [])
    await asyncio.wait_for(done, 5)
    response = ix.response
    assert response is not None
    assert (response.type, response.flags) == (5, 64)
    assert ix.original is not None
    assert ix.original.ephemeral
    assert ix.original.content == "Only you: Yes 3"
    assert world.fake.messages(world.channel_id) == []


async def test_subcommand_options_reach_the_group_command(world: World, bot: Bot) -> None:
    seen: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
    count = app_commands.Group(name="count", description="Counts")

    @count.command(description="Show one count")
    async def show(interaction: discord.Interaction, poll: str, round: int) -> None:
        seen.set_result((poll, round))
        await interaction.response.send_message(f"{poll} {round}")

    bot.tree.add_command(count)
    await sync_guild(bot, world)
    options: list[dict[str, Any]] = [
        {"name": "poll", "value": "bessemer"},
        {"name": "round", "value": 2},
    ]
    ix = await world.fake.inject_slash_command(
        world.guild_id, world.channel_id, ALICE, "count", options, subcommand="show"
    )
    assert await asyncio.wait_for(seen, 5) == ("bessemer", 2)
    (wrapped,) = ix.payload["data"]["options"]
    assert wrapped["type"] == 1
    assert [o["type"] for o in wrapped["options"]] == [3, 4]  # filled in from the schema
    with pytest.raises(ValueError, match="required options missing"):
        await world.fake.inject_slash_command(
            world.guild_id, world.channel_id, ALICE, "count", options[:1], subcommand="show"
        )


async def test_auto_sharded_client_connects(world: World) -> None:
    client = discord.AutoShardedClient(intents=discord.Intents.default(), guild_ready_timeout=0.05)
    task = await start(client)
    try:
        assert client.shard_count == 1
        guild = client.get_guild(world.guild_id)
        assert guild is not None
        assert guild.shard_id == 0
        assert any(r.path == "/gateway/bot" for r in world.fake.requests)
        identify = next(p for p in world.fake.gateway.received if p["op"] == 2)
        assert identify["d"]["shard"] == [0, 1]
    finally:
        await client.close()
        await task


async def test_gateway_protocol_errors(world: World) -> None:
    url = world.fake.gateway_url + "?v=10&encoding=json"
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url) as ws:
            hello = await ws.receive_json()
            assert hello["op"] == 10
            assert hello["d"]["heartbeat_interval"] == 41250
            await ws.send_json({"op": 1, "d": None})
            assert (await ws.receive_json())["op"] == 11
            resume = {"token": TOKEN, "session_id": "gone", "seq": 3}
            await ws.send_json({"op": 6, "d": resume})
            invalid = await ws.receive_json()
            assert (invalid["op"], invalid["d"]) == (9, False)
            await ws.send_json({"op": 3, "d": {"status": "online"}})
            closed = await ws.receive()
            assert (closed.type, closed.data) == (aiohttp.WSMsgType.CLOSE, 4003)
        async with session.ws_connect(url) as ws:
            await ws.receive_json()
            await ws.send_json({"op": 2, "d": {"token": "wrong", "intents": 1}})
            closed = await ws.receive()
            assert (closed.type, closed.data) == (aiohttp.WSMsgType.CLOSE, 4004)
    assert world.fake.gateway.close_codes == [4003, 4004]


async def test_fetch_guild_channel_member_and_roles(world: World, bot: Bot) -> None:
    fake = world.fake
    created = asyncio.create_task(bot.wait_for("guild_role_create", timeout=5))
    counter = fake.add_role(world.guild_id, "counter", mentionable=True)
    assert (await created).id == counter
    bob = 222_222_222_222_222_222
    fake.add_member(world.guild_id, bob, "bob", roles=[counter])

    guild = await bot.fetch_guild(world.guild_id)
    assert guild.name == "Count HQ"
    assert guild.approximate_member_count == 3
    member = await guild.fetch_member(bob)
    assert member.name == "bob"
    assert [r.id for r in member.roles if not r.is_default()] == [counter]
    roles = await guild.fetch_roles()
    assert {r.name for r in roles} == {"@everyone", "tallybot", "counter"}
    channel = await bot.fetch_channel(world.channel_id)
    assert isinstance(channel, discord.TextChannel)
    assert channel.name == "results"
    with pytest.raises(discord.NotFound) as unknown:
        await guild.fetch_member(333)
    assert unknown.value.code == 10007

    pinged = await text_channel(bot, world).send(f"<@&{counter}> new count")
    assert [r.id for r in pinged.role_mentions] == [counter]
    assert fake.message(pinged.id).mention_roles == [counter]
