"""``/count`` subcommands carried out: their options as a line of the core's text grammar (the
verb's spec writes it), the request (with the admin policy's verdict), the deferral and the
answer.

Each interaction is acknowledged at once (deferred, ephemeral when the answer will be) before any
work touches the store (refused as already acknowledged, it was another session's to carry out:
a shard's hand-over), then answered with a follow-up, which carries the reply's file when it
has one (``/count chart``). The command tree itself is in ``adapters.discord.tree``.

Every request of an answer goes through the adapter's replies (``bot.delivery.replies``), on
the interaction routes of ``DISCORD_LIMITS``: a 429 is waited out and the request sent again,
the first response only within Discord's 3 s (``ACK_S``), follow-ups within the token's 15
minutes (``TOKEN_S``). One member's commands in one channel are carried out in the order they
arrived (``bot.commands.inflight.InOrder``), each once it is acknowledged; while the bot stops
a command is not acknowledged at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.discord.admins import dm_place
from adapters.discord.announce import DiscordFollows
from adapters.discord.delivery import CALLBACK_ROUTE, FAILURES, FOLLOWUP_ROUTE, discord_file
from adapters.discord.embeds import choice_name, escape, reply_parts
from adapters.discord.forms import FormModal, ReopenButton
from adapters.discord.inbox import DiscordInbox
from adapters.discord.lib import app_commands, discord
from adapters.discord.mentions import NO_MENTIONS, DiscordMentions
from adapters.discord.names import DiscordNames
from bot.platform import (
    BUSY,
    ChannelRef,
    CommandError,
    Context,
    DeliveryError,
    Extra,
    InFlight,
    Opening,
    Place,
    Platform,
    RateLimited,
    Replies,
    Reply,
    Request,
    Route,
    Value,
    VerbSpec,
    visible_counts,
)

log = logging.getLogger(__name__)

PLATFORM = Platform("discord")
SUPPORTS = frozenset(Extra) - {Extra.PUBLISH}
"""The subscription options tallybot has on Discord (and ``publish`` in an announcement
channel)."""
Values = Mapping[str, Value]
"""A subcommand's options as given, by name."""

Ix = discord.Interaction[Any]
ALREADY_ACKNOWLEDGED = 40060
"""Discord's answer to a second acknowledgement: while a shard is handed over both sessions get
its interactions, and the one whose acknowledgement came second does nothing."""
ACK_S = 3.0
"""Discord takes an interaction's first response this long after it was created."""
TOKEN_S = 15 * 60.0
"""An interaction's token, and so its follow-ups, last this long."""
UNANSWERED: tuple[type[BaseException], ...] = (*FAILURES, DeliveryError)
"""What an answer's request raises when it could not be sent."""


def member_of(interaction: Ix) -> tuple[int | None, int | None, int]:
    """Whose command, where: one member's commands in one channel go in order."""
    return interaction.guild_id, interaction.channel_id, interaction.user.id


def place_of(interaction: Ix) -> str:
    """The place a command comes from (its server, or the DM): each has its share of the
    commands under way (``bot.commands.inflight.Backlog``)."""
    guild = interaction.guild_id
    return str(guild) if guild is not None else dm_place(interaction.channel_id)


def announcing(interaction: Ix) -> bool:
    """Whether the command comes from an announcement channel (type 5): ``publish`` there."""
    channel = interaction.channel
    return channel is not None and channel.type is discord.ChannelType.news


class SlashCommands:
    """Carries out ``/count`` subcommands through the core (``context.handle``)."""

    def __init__(
        self,
        context: Context,
        replies: Replies | None = None,
        announcements: Mapping[str, int] | None = None,
    ) -> None:
        """``announcements``: the operator's announcement channel of each count that a
        channel may follow (``[discord] announcements``)."""
        self.context = context
        self.announcements = dict(announcements or {})
        self.replies = replies if replies is not None else Replies()
        self.inflight = InFlight(backlog=context.backlog)
        self.forms: dict[tuple[int, str], FormModal] = {}
        """The form each member has open, by member and verb (one at a time)."""
        self.reopens: dict[tuple[int, str], ReopenButton] = {}
        """The button that reopens each member's last failed form, by member and verb."""
        self._arrived: dict[int, float] = {}
        """When each interaction being answered arrived (by the replies' clock)."""

    async def answer(
        self, interaction: Ix, route: str, request: Callable[[], Awaitable[object]]
    ) -> None:
        """One request of ``interaction``'s answer, through the replies (see the module
        docstring); raises one of ``UNANSWERED`` when it could not be sent."""

        async def once() -> None:
            try:
                await request()
            except discord.RateLimited as exc:
                raise RateLimited(
                    f"an answer to /count was rate limited for {exc.retry_after:.1f} s",
                    retry_after=exc.retry_after,
                ) from exc

        first = route == CALLBACK_ROUTE
        await self.replies.send(
            Route(route, str(interaction.id)),
            once,
            since=self._arrived.get(interaction.id),
            within=ACK_S if first else TOKEN_S,
        )

    async def answer_error(self, interaction: Ix, text: str) -> None:
        """``text`` to the member alone, as the first response or a follow-up."""
        with contextlib.suppress(*UNANSWERED):
            if interaction.response.is_done():
                await self.answer(
                    interaction,
                    FOLLOWUP_ROUTE,
                    lambda: interaction.followup.send(
                        escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
                    ),
                )
            else:
                await self.answer(
                    interaction,
                    CALLBACK_ROUTE,
                    lambda: interaction.response.send_message(
                        escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
                    ),
                )

    async def finish(self) -> None:
        """Let commands being answered finish, briefly; cancel what is left."""
        await self.inflight.finish()
        for button in self.reopens.values():
            button.stop()
        self.reopens.clear()

    async def run(self, interaction: Ix, spec: VerbSpec, values: Values) -> None:
        """Carry out one ``/count`` subcommand and answer it (never raises); a verb with a form,
        given no options (but the count of a form about one), opens its form instead."""
        if not self.inflight.accepting:
            return  # stopping: not acknowledged (Discord tells the member it failed)
        self._arrived[interaction.id] = self.replies.monotonic()
        where = place_of(interaction)
        if not await self.inflight.order.admit(where):  # more than could be finished in time
            await self.answer_error(interaction, BUSY.text)
            self._arrived.pop(interaction.id, None)
            return
        if not self.inflight.accepting:  # stopped while it waited for room
            self._arrived.pop(interaction.id, None)
            return
        place = self.inflight.order.place(member_of(interaction), where)  # before any await
        try:
            try:
                text = spec.line(values)
            except CommandError as exc:
                await self.answer_error(interaction, f"Error: {exc}")
                return
            if spec.opens_form(text.split()[1:]):
                await self._open_form(interaction, spec, text)
                return
            await self.run_line(interaction, spec, text, place)
        finally:
            place.leave()
            self._arrived.pop(interaction.id, None)

    async def run_line(
        self,
        interaction: Ix,
        spec: VerbSpec,
        text: str,
        place: Place | None = None,
        *,
        filled: Opening | None = None,
    ) -> None:
        """Carry out ``text`` (the subcommand's options, or its submitted form, as a line) and
        answer it (never raises); in ``place``, its member's turn (default: taken now).
        ``filled``: the form ``text`` was submitted with, offered again with an error."""
        if place is None:
            if not self.inflight.accepting:
                return
            place = self.inflight.order.place(member_of(interaction), place_of(interaction))
        new = interaction.id not in self._arrived  # a submitted form: arrived now
        if new:
            self._arrived[interaction.id] = self.replies.monotonic()

        async def failed(reply: Reply) -> None:
            await self.answer_error(interaction, reply.text)

        try:
            work = self._run(interaction, spec, text, place, filled)
            await self.inflight.run(f"/count {spec.name}", work, failed)
        finally:
            place.leave()
            if new:
                self._arrived.pop(interaction.id, None)

    async def _open_form(self, interaction: Ix, spec: VerbSpec, text: str) -> None:
        """Ask the core for the form ``text`` names and show it as the interaction's answer (a
        modal cannot follow a deferral); its refusal, privately, instead."""

        async def failed(reply: Reply) -> None:
            await self.answer_error(interaction, reply.text)

        work = self._show_form(interaction, spec, text)
        await self.inflight.run(f"/count {spec.name} (form)", work, failed)

    async def _show_form(self, interaction: Ix, spec: VerbSpec, text: str) -> None:
        reply = await self.context.handle(self.request_for(interaction, text, form=True))
        if reply.form is None:
            await self.answer_error(interaction, reply.text)
            return
        await self._send_form(interaction, spec, reply.form)

    async def _send_form(self, interaction: Ix, spec: VerbSpec, opening: Opening) -> None:
        """Show ``opening`` as the answer to ``interaction`` (a command, or a reopen button)."""

        async def submit(submitted: Ix, line: str, filled: Opening) -> None:
            await self.run_line(submitted, spec, line, filled=filled)

        modal = FormModal(opening, interaction.user.id, submit)
        earlier = self.forms.pop((interaction.user.id, spec.name), None)
        if earlier is not None:
            earlier.close()
        self.forms[interaction.user.id, spec.name] = modal
        try:
            await self.answer(
                interaction, CALLBACK_ROUTE, lambda: interaction.response.send_modal(modal)
            )
        except UNANSWERED as exc:
            log.warning("could not open the form of /count %s: %s", spec.name, exc)

    def _reopen_button(self, interaction: Ix, spec: VerbSpec, filled: Opening) -> ReopenButton:
        """A button that opens ``filled`` again (the member's earlier one of the verb stops)."""

        async def reopen(pressed: Ix, opening: Opening) -> None:
            self.reopens.pop((pressed.user.id, spec.name), None)
            await self._send_form(pressed, spec, opening)

        button = ReopenButton(filled, interaction.user.id, reopen)
        earlier = self.reopens.pop((interaction.user.id, spec.name), None)
        if earlier is not None:
            earlier.stop()
        self.reopens[interaction.user.id, spec.name] = button
        return button

    async def _run(
        self, interaction: Ix, spec: VerbSpec, text: str, place: Place, filled: Opening | None
    ) -> None:
        # The limits (bot.commands.throttle) are counted now, the public reply included: the
        # deferral below must say public or private before the answer is known, and a public
        # "thinking…" taken back would still have shown in the channel.
        request = self.request_for(interaction, text)
        ticket = self.context.throttle.check(request.channel, request.user_id, public=spec.public)
        request = dataclasses.replace(request, passed=ticket)
        if spec.instant:  # touches no store: answer at once
            try:
                await self._answer_now(interaction, await self.context.handle(request))
            except UNANSWERED as exc:
                log.warning("could not answer /count %s: %s", spec.name, exc)
            return
        public = ticket.public
        try:
            await self.answer(
                interaction,
                CALLBACK_ROUTE,
                lambda: interaction.response.defer(ephemeral=not public, thinking=True),
            )
        except discord.HTTPException as exc:
            if exc.code == ALREADY_ACKNOWLEDGED:  # another session of the shard has it
                log.info("/count %s: answered by another session (hand-over)", spec.name)
                return
            # Too late (10062): the user saw an error; do not act on it.
            log.warning(
                "could not acknowledge /count %s in time (%s): not carried out", spec.name, exc
            )
            return
        except UNANSWERED as exc:
            # Too late or not sent: the user saw an error; do not act on it.
            log.warning(
                "could not acknowledge /count %s in time (%s): not carried out", spec.name, exc
            )
            return
        async with place:  # after the member's earlier commands
            reply = await self.context.handle(request)
            again = None
            if filled is not None and not reply.ok:
                again = self._reopen_button(interaction, spec, filled)
            try:
                await self._follow_up(interaction, reply, deferred_public=public, view=again)
            except UNANSWERED as exc:
                log.warning("could not answer /count %s: %s", spec.name, exc)

    def request_for(self, interaction: Ix, text: str, *, form: bool = False) -> Request:
        user = interaction.user
        roles: frozenset[str] = frozenset()
        role_ids: frozenset[str] = frozenset()
        if isinstance(user, discord.Member):
            named = [r for r in user.roles if not r.is_default()]
            role_ids = frozenset(str(r.id) for r in named)
            roles = role_ids | {r.name for r in named}
        perms = interaction.permissions
        workspace = place_of(interaction)
        return self.context.request(
            ChannelRef(PLATFORM, workspace, str(interaction.channel_id)),
            str(user.id),
            user.name,
            text,
            platform_admin=perms.manage_guild or perms.administrator,
            roles=roles,
            role_ids=role_ids,
            # Discord lets a command's default member permissions say who may use it, but not
            # a subcommand's: /count subscribe checks Manage Channels (here) itself.
            channel_admin=perms.manage_channels or perms.administrator,
            supports=SUPPORTS | ({Extra.PUBLISH} if announcing(interaction) else set()),
            mentions=DiscordMentions(interaction.guild, perms, interaction.app_permissions),
            names=DiscordNames(interaction.guild),
            follows=DiscordFollows(interaction, self.announcements, self.replies),
            form=form,
            inbox=DiscordInbox(
                interaction.client,
                self.replies,
                user.id,
                dm=interaction.channel_id if interaction.guild_id is None else None,
            ),
        )

    async def _answer_now(self, interaction: Ix, reply: Reply) -> None:
        content, embed = reply_parts(reply)
        send = interaction.response.send_message
        extra: dict[str, Any] = {} if embed is None else {"embed": embed}
        await self.answer(
            interaction,
            CALLBACK_ROUTE,
            lambda: send(content, ephemeral=reply.ephemeral, allowed_mentions=NO_MENTIONS, **extra),
        )

    async def _follow_up(
        self,
        interaction: Ix,
        reply: Reply,
        *,
        deferred_public: bool,
        view: discord.ui.View | None = None,
    ) -> None:
        ephemeral = not deferred_public
        if deferred_public and reply.ephemeral:
            # The "thinking…" placeholder is public, the answer (an error) is not: take the
            # placeholder back and answer privately.
            with contextlib.suppress(*UNANSWERED):
                await self.answer(interaction, FOLLOWUP_ROUTE, interaction.delete_original_response)
            ephemeral = True
        content, embed = reply_parts(reply)
        followup = interaction.followup
        extra: dict[str, Any] = {}
        if embed is not None:
            extra["embed"] = embed
        if embed is None or content is not None:
            extra["content"] = content or "…"
        attachment = reply.attachment
        if view is not None:
            extra["view"] = view

        def send() -> Awaitable[object]:
            if attachment is not None:  # the chart under the text, with its alt text; a
                extra["file"] = discord_file(attachment)  # fresh file for each try
            return followup.send(ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra)

        await self.answer(interaction, FOLLOWUP_ROUTE, send)

    async def count_choices(self, interaction: Ix, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete for a count option: ids and titles containing what was typed, of the
        counts the member may see from this server (never another server's private count)."""
        if self.context.store is None:
            return []
        viewer = self.request_for(interaction, "")
        try:
            counts = [c for c in await visible_counts(self.context.store, viewer) if not c.archived]
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
