"""``/count create`` with no options opens a form (a Discord modal); its submit is the same
command line as the typed command, carried out by the core (FakeDiscord, the real discord.py
client): the count is made and seen, a bad field gets the typed command's error privately and
makes nothing, a member without authority is refused before the form opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.domain.model import Choice
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from tests.adapters.test_discord import ALICE, BOSS, Bot, World, answer, answered, config, opts
from tests.adapters.test_discord import running as running_bot
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world
from tests.fakes.discord_fake import FakeInteraction
from tests.fakes.discord_fake.modals import text_inputs, validate_modal

FILLED = {
    "count": "local-7",
    "title": 'Local 7 "strike" vote',
    "choices": "yes:Strike,no:No strike",
    "rules": "rule=majority tie=no",
    "figures": "received=412 eligible=450",
}


async def slash(bot: Bot, user: int, sub: str, **options: object) -> FakeInteraction:
    bot.world.vt.advance(6)  # within the command limits
    ix = await bot.fake.inject_slash_command(
        bot.world.guild, bot.world.results, user, "count", opts(**options), subcommand=sub
    )
    await bot.fake.wait_for(lambda: answered(ix) or ix.modal is not None)
    return ix


async def open_form(bot: Bot, user: int) -> FakeInteraction:
    shown = await slash(bot, user, "create")
    assert shown.modal is not None, shown.callbacks
    return shown


async def submit(bot: Bot, shown: FakeInteraction, values: dict[str, str]) -> FakeInteraction:
    bot.world.vt.advance(6)
    ix = await bot.fake.inject_modal_submit(shown, values)
    await bot.fake.wait_for(lambda: answered(ix))
    return ix


async def test_the_form_opens_and_its_submit_makes_the_count(tmp_path: Path, world: World) -> None:
    async with running_bot(world, config(tmp_path, world)) as bot:
        shown = await open_form(bot, BOSS)
        made = await submit(bot, shown, FILLED)
        status = await slash(bot, BOSS, "status", count="local-7")
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
            audit = await audit_rows.recent(conn)
    assert shown.response is not None
    assert shown.response.type == 9
    assert shown.modal is not None
    assert shown.modal["title"] == "New count"
    keys = [i["custom_id"] for i in text_inputs(shown.modal)]
    assert keys == ["count", "title", "choices", "rules", "figures"]
    assert answer(made).content.startswith("Created local-7: Local 7 strike vote;")
    assert "Local 7 strike vote" in str(answer(status).embeds) + answer(status).content
    assert count is not None
    assert (count.owner, count.received, count.eligible, count.rule.tie_holder) == (
        f"discord:{world.guild}",
        412,
        450,
        "no",
    )
    assert count.choices == (Choice("yes", "Strike"), Choice("no", "No strike"))
    assert [(a.action, a.count_id, a.actor) for a in audit[:1]] == [
        ("create", "local-7", f"discord:{BOSS} (boss)")
    ]


async def test_a_bad_field_gets_the_typed_commands_error_privately(
    tmp_path: Path, world: World
) -> None:
    bad = {**FILLED, "rules": "rule=unanimous"}
    async with running_bot(world, config(tmp_path, world)) as bot:
        submitted = await submit(bot, await open_form(bot, BOSS), bad)
        typed = await slash(
            bot,
            BOSS,
            "create",
            count="local-7",
            title='"Local 7 strike vote"',
            settings='choices="yes:Strike,no:No strike" rule=unanimous tie=no '
            "received=412 eligible=450",
        )
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    error = answer(submitted)
    assert error.content.startswith("Error: ")
    assert error.content == answer(typed).content
    assert error.ephemeral
    assert count is None


async def test_a_member_without_authority_is_refused_before_the_form_opens(
    tmp_path: Path, world: World
) -> None:
    async with running_bot(world, config(tmp_path, world)) as bot:
        refused = await slash(bot, ALICE, "create")
        async with bot.app.db.connect() as conn:
            audit = await audit_rows.recent(conn)
    assert refused.modal is None
    assert answer(refused).content.startswith("Error: only admins can create a count")
    assert answer(refused).ephemeral
    assert [(a.action, a.allowed, a.new) for a in audit[:1]] == [("create", False, "create")]


async def test_the_fake_takes_a_submit_only_of_the_modal_shown_to_that_member(
    tmp_path: Path, world: World
) -> None:
    async with running_bot(world, config(tmp_path, world)) as bot:
        shown = await open_form(bot, BOSS)
        with pytest.raises(ValueError, match="another member"):
            await bot.fake.inject_modal_submit(shown, FILLED, user_id=ALICE)
        with pytest.raises(ValueError, match="no modal"):
            await bot.fake.inject_modal_submit(shown, FILLED, custom_id="tallybot:create:1")
        with pytest.raises(ValueError, match="required"):
            await bot.fake.inject_modal_submit(shown, {**FILLED, "count": ""})
        listed = await slash(bot, BOSS, "list")
        with pytest.raises(ValueError, match="not answered with a modal"):
            await bot.fake.inject_modal_submit(listed, FILLED)


def test_the_fake_enforces_discords_modal_limits() -> None:
    row = {"type": 1, "components": [{"type": 4, "custom_id": "a", "label": "A", "style": 1}]}
    good = {"title": "t" * 45, "custom_id": "c" * 100, "components": [row] * 5}
    assert validate_modal(good).body() is None
    long_label = {"type": 1, "components": [{"type": 4, "custom_id": "a", "label": "L" * 46}]}
    for bad in (
        {**good, "title": "t" * 46},
        {**good, "custom_id": "c" * 101},
        {**good, "components": [row] * 6},
        {**good, "components": []},
        {**good, "components": [long_label]},
        {
            **good,
            "components": [
                {"type": 1, "components": [{**row["components"][0], "value": "v" * 4001}]}
            ],
        },
        {  # filled in with more than the input takes
            **good,
            "components": [
                {
                    "type": 1,
                    "components": [{**row["components"][0], "value": "v" * 11, "max_length": 10}],
                }
            ],
        },
    ):
        body = validate_modal(bad).body()
        assert body is not None, bad
        assert body["code"] == 50035


async def test_a_refused_form_offers_itself_again_as_the_member_filled_it_in(
    tmp_path: Path, world: World
) -> None:
    """Issue 28 part 5: a form that fails loses nothing typed: its error has a button that
    opens it again, filled in as submitted (an ephemeral error: only that member sees it)."""
    bad = {**FILLED, "rules": "rule=unanimous"}
    async with running_bot(world, config(tmp_path, world)) as bot:
        fake = bot.fake
        error = answer(await submit(bot, await open_form(bot, BOSS), bad))
        assert error.content.startswith("Error: ")
        (row,) = error.components
        (button,) = row["components"]
        assert (button["type"], button["label"]) == (2, "Reopen the form with what you typed")

        async def press(user: int) -> FakeInteraction:
            bot.world.vt.advance(6)
            ix = await fake.inject_component(
                world.guild, world.results, user, error.id, button["custom_id"]
            )
            await fake.wait_for(lambda: answered(ix) or ix.modal is not None)
            return ix

        with pytest.raises(ValueError, match="ephemeral"):  # nobody else sees the error
            await press(ALICE)
        with pytest.raises(ValueError, match="no component"):
            await fake.inject_component(world.guild, world.results, BOSS, error.id, "tallybot:x")
        again = await press(BOSS)
        assert again.modal is not None
        refilled = {i["custom_id"]: i.get("value") for i in text_inputs(again.modal)}
        assert refilled == bad
        made = await submit(bot, again, {**bad, "rules": "rule=majority tie=no"})
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    assert answer(made).content.startswith("Created local-7: Local 7 strike vote;")
    assert answer(made).components == []  # a success offers nothing
    assert count is not None
