"""A verb's form (``VerbSpec.form``) as a Discord modal: a text input for each field, filled in
with what the core opened it with (``Opening.shown``: an edited count's current values); what is
submitted becomes the verb's command line (``Opening.line``), carried out like the typed command.

The modal's custom id names the verb and the member (``tallybot:create:<user id>``): one form
open per member and verb is kept by discord.py until it is submitted, and opening it again
replaces it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from adapters.discord.lib import discord
from bot.commands.forms import Opening

Ix = discord.Interaction[Any]
Submit = Callable[[Ix, str], Awaitable[None]]
"""Carries out a submitted form's command line."""


class FormModal(discord.ui.Modal):
    """One verb's form, opened for one member."""

    def __init__(self, opening: Opening, user_id: int, submit: Submit) -> None:
        form = opening.form
        custom_id = f"tallybot:{opening.verb}:{user_id}"
        super().__init__(title=form.title, custom_id=custom_id, timeout=None)
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

    async def on_submit(self, interaction: Ix, /) -> None:
        values = {key: text_input.value for key, text_input in self.inputs.items()}
        await self.submit(interaction, self.opening.line(values))
