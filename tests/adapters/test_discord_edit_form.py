"""``/count edit <count>`` with no other option opens the edit form (a Discord modal) filled in
with the count's current settings (FakeDiscord, the real discord.py client): a changed field
edits the count, audited, and nothing else; a bad field gets the typed command's error; the
form opens only for who may administer the count (another server's admin gets the answer a typo
gets, and sees nothing of it); hostile titles and labels go in and out as plain text."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from tests.adapters.test_discord import ALICE, BOSS, World, answer, config
from tests.adapters.test_discord import running as running_bot
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world
from tests.adapters.test_discord_forms import slash, submit
from tests.adapters.test_discord_hostile import pinged_nobody
from tests.adapters.test_discord_tenants import EVE, slash_in, two_servers
from tests.fakes.discord_fake import FakeInteraction
from tests.fakes.discord_fake.markdown import markup
from tests.fakes.discord_fake.modals import text_inputs
from tests.hostile import HOSTILE

NAME = "local-7"


def local_7(guild: int, **changes: object) -> Count:
    count = Count(
        NAME,
        "Local 7 strike vote",
        (Choice("yes", "Strike"), Choice("no", "No strike")),
        DecisionRule(RuleKind.MAJORITY, "no"),
        received=412,
        eligible=450,
        status=CountStatus.COUNTING,
        owner=f"discord:{guild}",
    )
    return replace(count, **changes)  # type: ignore[arg-type]


def shown(ix: FakeInteraction) -> dict[str, str]:
    assert ix.modal is not None, ix.callbacks
    return {i["custom_id"]: i.get("value", "") for i in text_inputs(ix.modal)}


async def test_the_form_opens_filled_in_and_a_changed_field_edits_the_count(
    tmp_path: Path, world: World
) -> None:
    async with running_bot(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(world.guild))
        opened = await slash(bot, BOSS, "edit", count=NAME)
        edited = await submit(bot, opened, {"figures": "received=420 eligible=450"})
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
            (entry, *_) = await audit_rows.recent(conn, count_id=NAME)
    assert opened.response is not None
    assert opened.response.type == 9
    assert opened.modal is not None
    assert opened.modal["title"] == "Edit count"
    assert shown(opened) == {
        "title": "Local 7 strike vote",
        "choices": "yes:Strike,no:No strike",
        "rules": "rule=majority tie=no public=no",
        "figures": "received=412 eligible=450",
        "source": "source=manual",
    }
    assert answer(edited).content.startswith("Changed local-7: Local 7 strike vote;")
    assert answer(edited).ephemeral
    assert count == local_7(world.guild, received=420)
    assert (entry.action, entry.actor, entry.allowed) == ("edit", f"discord:{BOSS} (boss)", True)
    assert entry.old is not None
    assert entry.new == entry.old.replace("received=412", "received=420")


async def test_a_bad_field_gets_the_typed_commands_error_and_changes_nothing(
    tmp_path: Path, world: World
) -> None:
    async with running_bot(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(world.guild))
        refused = await submit(
            bot, await slash(bot, BOSS, "edit", count=NAME), {"rules": "rule=unanimous"}
        )
        typed = await slash(bot, BOSS, "edit", count=NAME, settings="rule=unanimous")
        unchanged = await submit(bot, await slash(bot, BOSS, "edit", count=NAME), {})
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
    assert answer(refused).content == answer(typed).content
    assert answer(refused).content.startswith("Error: rule: majority, plurality or threshold")
    assert answer(refused).ephemeral
    assert answer(unchanged).content.startswith("Error: nothing to change")
    assert count == local_7(world.guild)


async def test_the_form_opens_only_for_who_may_administer_the_count(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    async with running_bot(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(world.guild))
        theirs = await slash_in(bot, other, lounge, EVE, "edit", count=NAME)
        typo = await slash_in(bot, other, lounge, EVE, "edit", count="local-8")
        member = await slash(bot, ALICE, "edit", count=NAME)
        async with bot.app.db.connect() as conn:
            audit = await audit_rows.recent(conn, count_id=NAME)
    assert theirs.modal is None
    assert typo.modal is None
    assert answer(theirs).content == answer(typo).content.replace("local-8", NAME)
    assert answer(typo).content.startswith("Error: unknown count 'local-8'")
    shown = json.dumps([c.data for c in theirs.callbacks])  # what they carried, not when
    assert "Strike" not in shown
    assert "412" not in shown
    assert answer(theirs).ephemeral
    assert member.modal is None
    assert answer(member).content.startswith("Error: only admins of the server that owns local-7")
    assert [(a.actor, a.allowed) for a in audit] == [
        (f"discord:{ALICE} (alice)", False),
        (f"discord:{EVE} (eve)", False),
    ]


async def test_hostile_titles_and_labels_go_in_and_out_as_plain_text(
    tmp_path: Path, world: World
) -> None:
    title, label, new_title = HOSTILE[0], HOSTILE[1], HOSTILE[1] + " x"
    choices = (Choice("yes", label), Choice("no", "No"))
    long = "Long " * 24  # 120 characters, the longest legal title: shown whole in the form
    async with running_bot(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(world.guild, title=title, choices=choices))
            await count_rows.upsert(conn, local_7(world.guild, id="long-7", title=long))
        opened = await slash(bot, BOSS, "edit", count=NAME)
        edited = await submit(bot, opened, {"title": new_title})
        cut = await slash(bot, BOSS, "edit", count="long-7")
        left = await submit(bot, cut, {"figures": "received=413 eligible=450"})
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
            long_count = await count_rows.get(conn, "long-7")
    assert shown(opened)["title"] == title
    assert shown(opened)["choices"] == f"yes:{label},no:No"
    assert count is not None
    assert count.title == new_title
    assert count.choices == choices
    message = answer(edited)
    assert message.content.startswith("Changed local-7: ")
    assert markup(message.content) == []
    pinged_nobody(message)
    assert shown(cut)["title"] == long.strip()[:256]
    assert answer(left).content.startswith("Changed long-7: ")
    assert long_count is not None
    assert (long_count.title, long_count.received) == (long, 413)


async def test_a_form_answers_only_the_member_it_was_opened_for(
    tmp_path: Path, world: World
) -> None:
    """A forged submit (another member's client making up a MODAL_SUBMIT with the form's id)
    neither carries the form out nor takes it over; the ids say nothing that can be guessed."""
    async with running_bot(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(world.guild))
        opened = await slash(bot, BOSS, "edit", count=NAME)
        again = await slash(bot, BOSS, "edit", count=NAME)
        assert opened.modal is not None
        assert again.modal is not None
        form_id = str(again.modal["custom_id"])
        bot.world.vt.advance(6)
        forged = await bot.fake.inject_modal_submit(
            again, {"title": "Taken over"}, user_id=ALICE, custom_id=form_id, forged=True
        )
        await bot.fake.wait_for(lambda: bool(forged.callbacks))
        edited = await submit(bot, again, {"title": "Local 7 strike vote (recount)"})
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
    assert form_id not in (f"tallybot:edit:{BOSS}", str(opened.modal["custom_id"]))
    assert str(BOSS) not in form_id
    refused = answer(forged)
    assert refused.ephemeral
    assert refused.content == "Error: this form was opened for someone else."
    assert NAME not in refused.content
    assert answer(edited).content.startswith(f"Changed {NAME}: Local 7 strike vote (recount)")
    assert count is not None
    assert count.title == "Local 7 strike vote (recount)"
