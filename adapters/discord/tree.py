"""The ``/count`` command tree: one group with a subcommand for each verb of the core's table
(``bot.commands.verbs``), built from the verb's spec; carried out by
``adapters.discord.commands``.

Discord takes at most 25 subcommands under one command (:data:`SUBCOMMANDS_MOST`): the verbs
beyond the first 25 of the table (a plug-in's, which come last) are commands of their own,
``/echo`` beside ``/count``, as Telegram has them (:func:`commands`)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Optional

from adapters.discord.commands import SlashCommands
from adapters.discord.lib import app_commands, discord
from bot.platform import Option, OptionKind, VerbSpec

log = logging.getLogger(__name__)


FRESH_TURN_S = 0.5
"""How late after its turn an IDENTIFY may still go (a slow connection): within the room the
shared turns leave (``bot.cluster.turns.SAFETY``: 0.56 s of Discord's 5)."""
Identify = Callable[[int], Awaitable[None]]
"""Waits until a shard may start its session (``bot.cluster.shards.SessionStarts.turn``)."""


class TallybotClient(discord.Client):
    """discord.py's client with the ``/count`` command tree; with ``identify``, a shard's session
    starts (IDENTIFY) when ``identify(shard)`` says it may, instead of discord.py's own 5 s
    pause (``before_identify_hook``, discord.py's hook for exactly this)."""

    def __init__(
        self,
        runner: SlashCommands,
        channel_deleted: Callable[[int, str], None],
        identify: Identify | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.runner = runner
        self._channel_deleted = channel_deleted
        self._identify = identify
        self.taking_commands = True
        """False once its shard is handed over (the new holder's session answers them)."""
        self.turn_taken: float | None = None
        """When its turn to identify came, waited for before connecting
        (``adapters.discord.shards``): the next IDENTIFY goes at once if it comes within
        ``FRESH_TURN_S`` of it, else it waits for another turn."""
        self.came_up: Callable[[int], None] = lambda shard: None
        """Told when the session is ready."""
        self.tree: app_commands.CommandTree[TallybotClient] = _Tree(self)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        taken, self.turn_taken = self.turn_taken, None
        if taken is not None and time.monotonic() - taken <= FRESH_TURN_S:
            pass
        elif self._identify is None:
            await super().before_identify_hook(shard_id, initial=initial)
        else:
            await self._identify(shard_id or 0)

    async def on_ready(self) -> None:
        self.came_up(self.shard_id or 0)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        # Remembered so that the notice about a deleted channel can still name it.
        self._channel_deleted(channel.id, channel.name)


Ix = discord.Interaction[TallybotClient]


class _Tree(app_commands.CommandTree[TallybotClient]):
    async def interaction_check(self, interaction: Ix, /) -> bool:
        return self.client.taking_commands  # a session handed over leaves them to the new one

    async def on_error(self, interaction: Ix, error: app_commands.AppCommandError) -> None:
        # Our callbacks answer their own errors; this is for what fails before them (options
        # discord.py could not convert, a command Discord knows but this version does not).
        log.error("/count failed before it ran: %s", error, exc_info=error)
        await interaction.client.runner.answer_error(
            interaction, "Error: that command could not be read; try again."
        )


def intents() -> discord.Intents:
    """Only guilds: channel names for error messages and role names for the admin check.

    No privileged intent (members, presences, message content) is needed: slash commands carry
    the member, their roles and permissions with them."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    return wanted


async def _count_autocomplete(interaction: Ix, current: str) -> list[app_commands.Choice[str]]:
    return await interaction.client.runner.count_choices(interaction, current)


def _annotation(option: Option) -> Any:
    kind: Any = app_commands.Range[int, 0] if option.kind is OptionKind.NUMBER else str
    return kind if option.required else Optional[kind]  # noqa: UP045 (a runtime value)


SUBCOMMANDS_MOST = 25
"""Discord's most subcommands and groups under one command."""


def subcommand(
    spec: VerbSpec,
    runner: SlashCommands,
    guild_ids: list[int] | None = None,
    *,
    alone: bool = False,
) -> app_commands.Command[Any, ..., None]:
    """``/count <verb>`` built from the verb's spec: its options typed, described, with their
    choices, and the count autocompleted; carried out by ``runner``. ``alone``: ``/<verb>``, a
    command of its own in servers only (``guild_ids`` as the group's)."""
    options = spec.options()
    if spec.form is not None and not spec.form.for_count:
        # given none of them, the form opens (``SlashCommands.run``)
        options = tuple(dataclasses.replace(o, required=False) for o in options)

    async def callback(interaction: Ix, **values: str | int | None) -> None:
        await runner.run(interaction, spec, values)

    params = [inspect.Parameter("interaction", inspect.Parameter.POSITIONAL_ONLY, annotation=Ix)]
    params += [
        inspect.Parameter(
            o.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=_annotation(o),
            default=inspect.Parameter.empty if o.required else None,
        )
        for o in options
    ]
    # discord.py reads a callback's options from its signature, as a decorated method's would be
    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    described = app_commands.describe(**{o.name: o.description for o in options})(callback)
    choices = {
        o.name: [app_commands.Choice(name=label, value=value) for label, value in o.choices]
        for o in options
        if o.choices
    }
    if choices:
        described = app_commands.choices(**choices)(described)
    counts = {o.name: _count_autocomplete for o in options if o.kind is OptionKind.COUNT}
    if counts:
        described = app_commands.autocomplete(**counts)(described)
    command: app_commands.Command[Any, ..., None] = app_commands.Command(
        name=spec.name,
        description=spec.summary,
        callback=described,
        guild_ids=guild_ids if alone else None,
    )
    command.guild_only = alone
    return command


class CountGroup(app_commands.Group):
    """``/count``: a subcommand for each verb of the table (``context.verbs``)."""

    def __init__(self, runner: SlashCommands, guild_ids: list[int] | None) -> None:
        super().__init__(
            name="count",
            description="Live vote counts: follow a count here, see where it stands",
            guild_ids=guild_ids,
            guild_only=True,
        )
        for spec in list(runner.context.verbs)[:SUBCOMMANDS_MOST]:
            self.add_command(subcommand(spec, runner))


def commands(
    runner: SlashCommands, guild_ids: list[int] | None
) -> list[app_commands.Command[Any, ..., None] | CountGroup]:
    """What the bot registers: ``/count`` with the table's first 25 verbs, and each verb beyond
    them as a command of its own."""
    beyond = list(runner.context.verbs)[SUBCOMMANDS_MOST:]
    alone = [subcommand(spec, runner, guild_ids, alone=True) for spec in beyond]
    return [CountGroup(runner, guild_ids), *alone]
