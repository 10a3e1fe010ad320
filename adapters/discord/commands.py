"""``/count`` subcommands carried out: their options as a line of the core's text grammar, the
request (with the admin policy's verdict), the deferral and the answer.

Each interaction is acknowledged at once (deferred, ephemeral when the answer will be) before any
work touches the store, then answered with a follow-up, which carries the reply's file when it
has one (``/count chart``). The command tree itself is in ``adapters.discord.tree``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

from adapters.discord.delivery import FAILURES, NO_MENTIONS, discord_file
from adapters.discord.embeds import choice_name, escape, reply_parts
from adapters.discord.lib import app_commands, discord
from bot.commands.parse import Verb
from bot.commands.request import Reply, Request
from bot.errors import CommandError
from bot.platform import Context
from bot.store import counts as count_rows
from bot.subscription import ChannelRef, Platform

log = logging.getLogger(__name__)

PLATFORM = Platform("discord")
SHUTDOWN_GRACE_S = 5.0
"""How long leaving waits for commands being answered before cancelling them."""
PUBLIC_VERBS = frozenset({Verb.SUBSCRIBE, Verb.STATUS, Verb.CHART})
"""Commands whose answer is shown to the channel; every other answer (and every error) is
ephemeral."""

FAILED = "Error: tallybot could not do that (an internal error, in the operator's log); try again."

Ix = discord.Interaction[Any]


async def answer_error(interaction: Ix, text: str) -> None:
    with contextlib.suppress(*FAILURES):
        if interaction.response.is_done():
            await interaction.followup.send(
                escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
            )
        else:
            await interaction.response.send_message(
                escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
            )


@dataclass(frozen=True, slots=True)
class Options:
    """The typed options of one ``/count`` subcommand."""

    count: str | None = None
    mode: str | None = None
    figures: str | None = None
    void: int | None = None
    challenged: int | None = None
    received: int | None = None


def command_text(verb: Verb, options: Options | None = None) -> str:
    """The text-grammar line (``bot.commands.parse``) that a slash command's options describe.

    ``/count update count:bessemer-2021 figures:"yes=463 no=1,100" challenged:505`` ->
    ``update bessemer-2021 yes=463 no=1,100 challenged=505``. The grammar then checks it like a
    typed line (unknown choices, figures given twice, nothing given).
    """
    options = options or Options()
    words: list[str] = [verb.value]
    if options.count is not None:
        count = options.count.strip()
        if not count or any(ch.isspace() for ch in count):
            raise CommandError(
                f"{options.count!r} is not a count name (they have no spaces): "
                "pick one from the list that appears as you type"
            )
        words.append(count)
    if options.mode is not None:
        words.append(options.mode)
    if options.figures is not None:
        text = re.sub(r"\s*=\s*", "=", options.figures)  # "yes = 463" -> "yes=463"
        text = re.sub(r"[;]|,(?=\s)", " ", text)  # "yes=463, no=1,100" -> "yes=463  no=1,100"
        words.extend(text.split())
    for name in ("void", "challenged", "received"):
        value = getattr(options, name)
        if value is not None:
            words.append(f"{name}={value}")
    return " ".join(words)


class SlashCommands:
    """Carries out ``/count`` subcommands through the core (``context.handle``)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self._inflight: set[asyncio.Task[Any]] = set()

    async def finish(self) -> None:
        """Let commands being answered finish, briefly; cancel what is left."""
        current = asyncio.current_task()
        inflight = [t for t in self._inflight if t is not current and not t.done()]
        if inflight:
            _, pending = await asyncio.wait(inflight, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def run(self, interaction: Ix, verb: Verb, options: Options) -> None:
        """Carry out one ``/count`` subcommand and answer it (never raises)."""
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            await self._run(interaction, verb, options)
        except Exception:  # every command gets an answer, whatever went wrong
            log.exception("/count %s failed", verb)
            await answer_error(interaction, FAILED)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _run(self, interaction: Ix, verb: Verb, options: Options) -> None:
        try:
            text = command_text(verb, options)
        except CommandError as exc:
            await answer_error(interaction, f"Error: {exc}")
            return
        # The limits (bot.commands.throttle) are counted now, the public reply included: the
        # deferral below must say public or private before the answer is known, and a public
        # "thinking…" taken back would still have shown in the channel.
        request = self.request_for(interaction, text)
        ticket = self.context.throttle.check(
            request.channel, request.user_id, public=verb in PUBLIC_VERBS
        )
        request = dataclasses.replace(request, passed=ticket)
        if verb is Verb.HELP:  # touches no store: answer at once
            try:
                await self._answer_now(interaction, await self.context.handle(request))
            except FAILURES as exc:
                log.warning("could not answer /count help: %s", exc)
            return
        public = ticket.public
        try:
            await interaction.response.defer(ephemeral=not public, thinking=True)
        except FAILURES as exc:
            # Too late (10062) or already answered: the user saw an error; do not act on it.
            log.warning("could not acknowledge /count %s in time (%s): not carried out", verb, exc)
            return
        try:
            reply = await self.context.handle(request)
        except Exception:
            log.exception("/count %s failed", verb)
            reply = Reply(FAILED, ok=False)
        try:
            await self._follow_up(interaction, reply, deferred_public=public)
        except FAILURES as exc:
            log.warning("could not answer /count %s: %s", verb, exc)

    def request_for(self, interaction: Ix, text: str) -> Request:
        user = interaction.user
        roles: frozenset[str] = frozenset()
        if isinstance(user, discord.Member):
            named = [r for r in user.roles if not r.is_default()]
            roles = frozenset([str(r.id) for r in named] + [r.name for r in named])
        perms = interaction.permissions
        workspace = str(interaction.guild_id) if interaction.guild_id is not None else "@me"
        return self.context.request(
            ChannelRef(PLATFORM, workspace, str(interaction.channel_id)),
            str(user.id),
            user.name,
            text,
            platform_admin=perms.manage_guild or perms.administrator,
            roles=roles,
        )

    async def _answer_now(self, interaction: Ix, reply: Reply) -> None:
        content, embed = reply_parts(reply)
        send = interaction.response.send_message
        if embed is None:
            await send(content, ephemeral=reply.ephemeral, allowed_mentions=NO_MENTIONS)
        else:
            await send(
                content, embed=embed, ephemeral=reply.ephemeral, allowed_mentions=NO_MENTIONS
            )

    async def _follow_up(self, interaction: Ix, reply: Reply, *, deferred_public: bool) -> None:
        ephemeral = not deferred_public
        if deferred_public and reply.ephemeral:
            # The "thinking…" placeholder is public, the answer (an error) is not: take the
            # placeholder back and answer privately.
            with contextlib.suppress(*FAILURES):
                await interaction.delete_original_response()
            ephemeral = True
        content, embed = reply_parts(reply)
        followup = interaction.followup
        extra: dict[str, Any] = {}
        if reply.attachment is not None:  # the chart, shown under the text with its alt text
            extra["file"] = discord_file(reply.attachment)
        if embed is None:
            await followup.send(
                content or "…", ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )
        elif content is None:
            await followup.send(
                embed=embed, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )
        else:
            await followup.send(
                content, embed=embed, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )

    async def count_choices(self, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete for a count option: ids and titles containing what was typed."""
        if self.context.store is None:
            return []
        try:
            async with self.context.store.connect() as conn:
                counts = await count_rows.all_counts(conn)
        except Exception:
            log.exception("autocomplete: could not read the counts")
            return []
        typed = current.strip().lower()
        found = [c for c in counts if typed in c.id.lower() or typed in c.title.lower()]
        found.sort(key=lambda c: (not c.id.lower().startswith(typed), c.id))
        return [
            app_commands.Choice(name=choice_name(f"{c.id} — {c.title}", 100), value=c.id)
            for c in found[:25]
        ]
