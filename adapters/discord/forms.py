"""A verb's form (``VerbSpec.form``) as a Discord modal: a text input for each field, filled in
with what the core opened it with (``Opening.shown``: an edited count's current values); what is
submitted becomes the verb's command line (``Opening.line``), carried out like the typed command.

A form answers only the member it was opened for (``interaction_check``: anyone else's submit
is refused privately and leaves the form open), and its custom id is the verb and a random
token (``tallybot:edit:<token>``): nothing in it can be guessed. discord.py keeps a form until
it is submitted; the caller closes a member's earlier form of a verb when it opens another
(``FormModal.close``).

A submitted form whose command fails (a bad field) gets its error with a button,
:class:`ReopenButton`, that opens the form again filled in with what the member typed: Discord
keeps nothing of a submitted form, and the member would type it all again."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.discord.delivery import FAILURES
from adapters.discord.embeds import escape
from adapters.discord.lib import discord
from adapters.discord.mentions import NO_MENTIONS
from bot.platform import Opening

Ix = discord.Interaction[Any]
Submit = Callable[[Ix, str, Opening], Awaitable[None]]
"""Carries out a submitted form's command line; given the form as it was filled in."""
Reopen = Callable[[Ix, Opening], Awaitable[None]]
"""Opens a form (filled in) as the answer to an interaction."""
NOT_YOURS = "Error: this form was opened for someone else."
REOPEN_LABEL = "Reopen the form with what you typed"


async def only_for(user_id: int, interaction: Ix) -> bool:
    """Whether ``interaction`` is the member's; anyone else is told so, privately."""
    if interaction.user.id == user_id:
        return True
    with contextlib.suppress(*FAILURES):
        await interaction.response.send_message(
            escape(NOT_YOURS), ephemeral=True, allowed_mentions=NO_MENTIONS
        )
    return False


class FormModal(discord.ui.Modal):
    """One verb's form, opened for one member."""

    def __init__(self, opening: Opening, user_id: int, submit: Submit) -> None:
        form = opening.form
        custom_id = f"tallybot:{opening.verb}:{secrets.token_urlsafe(18)}"
        super().__init__(title=form.title, custom_id=custom_id, timeout=None)
        self.user_id = user_id
        self.opening = opening
        self.submit = submit
        self.inputs: dict[str, discord.ui.TextInput[FormModal]] = {}
        for field in form.fields:
            text_input: discord.ui.TextInput[FormModal] = discord.ui.TextInput(
                label=field.label,
                custom_id=field.key,
                placeholder=field.placeholder or None,
                default=opening.shown.get(field.key) or None,
                required=field.required,
                max_length=field.most,
            )
            self.inputs[field.key] = text_input
            self.add_item(text_input)

    async def interaction_check(self, interaction: Ix, /) -> bool:
        """Only the member it was opened for; anyone else is told so, privately."""
        return await only_for(self.user_id, interaction)

    def close(self) -> None:
        """Forget the form (a newer one of the member's replaces it)."""
        self.stop()

    async def on_submit(self, interaction: Ix, /) -> None:
        values = {key: text_input.value for key, text_input in self.inputs.items()}
        filled = dataclasses.replace(self.opening, shown=values)
        await self.submit(interaction, self.opening.line(values), filled)


class ReopenButton(discord.ui.View):
    """Under a submitted form's error: a button that opens the form again, ``filled`` in as the
    member left it; for that member only, once."""

    def __init__(self, filled: Opening, user_id: int, reopen: Reopen) -> None:
        super().__init__(timeout=None)  # discord.py gives an ephemeral message's view 15 min
        self.user_id = user_id
        self.filled = filled
        button: discord.ui.Button[ReopenButton] = discord.ui.Button(
            label=REOPEN_LABEL,
            style=discord.ButtonStyle.primary,
            custom_id=f"tallybot:reopen:{filled.verb}:{secrets.token_urlsafe(18)}",
        )

        async def pressed(interaction: Ix) -> None:
            self.stop()
            await reopen(interaction, filled)

        button.callback = pressed  # type: ignore[method-assign]
        self.add_item(button)

    async def interaction_check(self, interaction: Ix, /) -> bool:
        return await only_for(self.user_id, interaction)
