"""The ``/count`` command tree: one group whose subcommands build the same text grammar as every
other platform (``bot.commands.parse``), carried out by ``adapters.discord.commands``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from adapters.discord.commands import Options, SlashCommands, answer_error
from adapters.discord.lib import app_commands, discord
from bot.commands.parse import Verb

log = logging.getLogger(__name__)


class TallybotClient(discord.Client):
    """discord.py's client with the ``/count`` command tree."""

    def __init__(
        self,
        runner: SlashCommands,
        channel_deleted: Callable[[int, str], None],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.runner = runner
        self._channel_deleted = channel_deleted
        self.tree: app_commands.CommandTree[TallybotClient] = _Tree(self)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        # Remembered so that the notice about a deleted channel can still name it.
        self._channel_deleted(channel.id, channel.name)


Ix = discord.Interaction[TallybotClient]


class _Tree(app_commands.CommandTree[TallybotClient]):
    async def on_error(self, interaction: Ix, error: app_commands.AppCommandError) -> None:
        # Our callbacks answer their own errors; this is for what fails before them (options
        # discord.py could not convert, a command Discord knows but this version does not).
        log.error("/count failed before it ran: %s", error, exc_info=error)
        await answer_error(interaction, "Error: that command could not be read; try again.")


def intents() -> discord.Intents:
    """Only guilds: channel names for error messages and role names for the admin check.

    No privileged intent (members, presences, message content) is needed: slash commands carry
    the member, their roles and permissions with them."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    return wanted


async def _count_autocomplete(interaction: Ix, current: str) -> list[app_commands.Choice[str]]:
    return await interaction.client.runner.count_choices(current)


MODE_CHOICES = [
    app_commands.Choice(name="significant events only (default)", value="events"),
    app_commands.Choice(name="every change", value="all"),
    app_commands.Choice(name="a live scoreboard, plus significant events", value="live"),
]
FIGURES_HELP = "Figures per choice as name=number, e.g. yes=463 no=1100"
Figure = app_commands.Range[int, 0]


class CountGroup(app_commands.Group):
    """``/count``: every subcommand maps onto the text grammar and ``Commands.handle``."""

    def __init__(self, runner: SlashCommands, guild_ids: list[int] | None) -> None:
        super().__init__(
            name="count",
            description="Live vote counts: follow a count here, see where it stands",
            guild_ids=guild_ids,
            guild_only=True,
        )
        self.runner = runner

    @app_commands.command(description="Post a count's updates in this channel")
    @app_commands.describe(
        count="The count (start typing to search)", mode="What to post (default: events)"
    )
    @app_commands.choices(mode=MODE_CHOICES)
    @app_commands.autocomplete(count=_count_autocomplete)
    async def subscribe(
        self, interaction: Ix, count: str, mode: app_commands.Choice[str] | None = None
    ) -> None:
        options = Options(count=count, mode=mode.value if mode is not None else None)
        await self.runner.run(interaction, Verb.SUBSCRIBE, options)

    @app_commands.command(description="Stop posting a count's updates in this channel")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def unsubscribe(self, interaction: Ix, count: str) -> None:
        await self.runner.run(interaction, Verb.UNSUBSCRIBE, Options(count=count))

    @app_commands.command(name="list", description="Every count, and what this channel follows")
    async def list_(self, interaction: Ix) -> None:
        await self.runner.run(interaction, Verb.LIST, Options())

    @app_commands.command(description="Where a count stands now")
    @app_commands.describe(count="The count (optional when this channel follows just one)")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def status(self, interaction: Ix, count: str | None = None) -> None:
        await self.runner.run(interaction, Verb.STATUS, Options(count=count))

    @app_commands.command(description="A count's last updates")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def history(self, interaction: Ix, count: str) -> None:
        await self.runner.run(interaction, Verb.HISTORY, Options(count=count))

    @app_commands.command(description="A count so far, as a picture")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def chart(self, interaction: Ix, count: str) -> None:
        await self.runner.run(interaction, Verb.CHART, Options(count=count))

    @app_commands.command(description="What tallybot can do")
    async def help(self, interaction: Ix) -> None:
        await self.runner.run(interaction, Verb.HELP, Options())

    @app_commands.command(description="Admins: enter new figures for a count")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def update(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.runner.run(interaction, Verb.UPDATE, options)

    @app_commands.command(description="Admins: correct figures (that go down, or of a final)")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def correct(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.runner.run(interaction, Verb.CORRECT, options)

    @app_commands.command(description="Admins: the count is paused")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def pause(self, interaction: Ix, count: str) -> None:
        await self.runner.run(interaction, Verb.PAUSE, Options(count=count))

    @app_commands.command(description="Admins: the count goes on")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def resume(self, interaction: Ix, count: str) -> None:
        await self.runner.run(interaction, Verb.RESUME, Options(count=count))

    @app_commands.command(description="Admins: the count is final (optionally with figures)")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def final(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.runner.run(interaction, Verb.FINAL, options)

    @app_commands.command(description="Admins: messages that could not be delivered")
    async def deliveries(self, interaction: Ix) -> None:
        await self.runner.run(interaction, Verb.DELIVERIES, Options())
