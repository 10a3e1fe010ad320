"""Abusive commands on Discord (FakeDiscord, the real discord.py client): a flood of /count
status is answered, privately but for one answer, with no public "thinking…" taken back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.adapters.test_discord import ALICE, BOSS, World, answer, answered, config, opts, running
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world

FLOOD = 12


async def test_a_flood_of_status_gets_one_public_answer(tmp_path: Path, world: World) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await bot.ingest(84, 201)
        flood = await asyncio.gather(
            *(
                fake.inject_slash_command(
                    world.guild,
                    world.results,
                    ALICE,
                    "count",
                    opts(count="bessemer-2021"),
                    subcommand="status",
                )
                for _ in range(FLOOD)
            )
        )
        await fake.wait_for(lambda: all(answered(ix) for ix in flood), timeout=20)

    shown = [answer(ix) for ix in flood]
    public = [m for m in shown if not m.ephemeral]
    assert len(public) == 1
    assert public[0].embeds[0]["description"].startswith("**No union leads by 117**")
    slowed = [m for m in shown if m.content.startswith("Slow down: at most 8 commands")]
    assert len(slowed) == FLOOD - 8
    assert all(m.ephemeral for m in slowed)
    deferrals = [ix.callbacks[0] for ix in flood]
    assert [(c.type, c.flags) for c in deferrals].count((5, 0)) == 1  # deferred publicly once
    assert not any(ix.original is not None and ix.original.deleted for ix in flood)
    assert [m.interaction_id for m in fake.messages(world.results)] == [public[0].interaction_id]


async def test_a_figure_of_4301_digits_gets_an_answer(tmp_path: Path, world: World) -> None:
    async with running(world, config(tmp_path, world)) as bot:
        ix = await bot.slash(
            BOSS,
            "update",
            opts(count="bessemer-2021", figures=f"yes={'9' * 4301} no=1"),
            channel=world.results,
        )
    shown = answer(ix)
    assert shown.ephemeral
    assert shown.content.startswith("Error: ")
