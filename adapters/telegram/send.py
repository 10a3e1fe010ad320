"""Single Bot API requests of a delivery: send a message or a photo, edit, probe, delete.

``TelegramSender`` does one request per call, paced (``adapters.telegram.limits.route`` names
its route; a request that may create the delivery's message is paced with ``delivers=True``)
and with every failure translated (``adapters.telegram.errors``): ``RateLimited`` on 429,
``MaybeSent`` when no answer came but the request may have been carried out,
``TransientDeliveryError`` when it surely was not, ``PermanentDeliveryError`` when Telegram
refused (kicked, blocked, chat not found), ``MessageGone`` for an edit of a message that is
no longer there. An edit answered "message is not modified" succeeded: the message already
shows it. Posting exactly once on top of these is ``adapters.telegram.once``.

Every message goes out as ``render.Rendered`` HTML with link previews off; a chart is a photo
(``sendPhoto``, the PNG uploaded) whose caption is the message, cut to 1,024 characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from aiogram import Bot
from aiogram.types import BufferedInputFile, LinkPreviewOptions

from bot.platform import Attachment, Pace, unpaced

from .errors import DELETED_ALREADY, FAILURES, description, edit_gone, not_modified, translate
from .limits import PROBE, route
from .render import Rendered

NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message as it goes out: its text (or a photo's caption) and the photo, if any."""

    text: Rendered
    photo: Attachment | None = None


class Probe(Enum):
    COPY = "copy"
    """Answered "message is not modified": that message shows exactly this content."""
    NOT_OURS = "not ours"
    """Not found, not editable by us, or another kind of message: not a copy."""
    OVERWRITTEN = "overwritten"
    """The edit went through: it was ours but showed something else, and now shows this."""


class TelegramSender:
    """Bot API requests for deliveries through ``bot`` (see the module docstring)."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    async def send(
        self, chat_id: int, out: Outgoing, *, pace: Pace = unpaced, silent: bool = False
    ) -> int:
        """Post ``out`` (``silent``: without a notification, as its ``quiet`` text, which a
        probe tells from a notified copy); the new message's id."""
        html = out.text.silent_html if silent else out.text.html
        method = "sendPhoto" if out.photo is not None else "sendMessage"
        where = f"telegram {method} to {chat_id}"
        async with pace(route(method, chat_id), delivers=True):
            try:
                if out.photo is not None:
                    sent = await self.bot.send_photo(
                        chat_id,
                        BufferedInputFile(out.photo.data, out.photo.filename),
                        caption=html,
                        parse_mode=out.text.parse_mode,
                        disable_notification=silent,
                    )
                else:
                    sent = await self.bot.send_message(
                        chat_id,
                        html,
                        parse_mode=out.text.parse_mode,
                        link_preview_options=NO_PREVIEW,
                        disable_notification=silent,
                    )
            except FAILURES as exc:
                raise translate(exc, where) from exc
        return sent.message_id

    async def _edit(self, chat_id: int, message_id: int, out: Outgoing) -> None:
        if out.photo is not None:
            await self.bot.edit_message_caption(
                chat_id=chat_id,
                message_id=message_id,
                caption=out.text.html,
                parse_mode=out.text.parse_mode,
            )
        else:
            await self.bot.edit_message_text(
                out.text.html,
                chat_id=chat_id,
                message_id=message_id,
                parse_mode=out.text.parse_mode,
                link_preview_options=NO_PREVIEW,
            )

    async def edit(
        self, chat_id: int, message_id: int, out: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        """Show ``out`` in the message ``message_id`` (its caption for a photo)."""
        method = "editMessageCaption" if out.photo is not None else "editMessageText"
        where = f"telegram {method} of {message_id} in {chat_id}"
        async with pace(route(method, chat_id), delivers=True):
            try:
                await self._edit(chat_id, message_id, out)
            except FAILURES as exc:
                if not_modified(exc):
                    return
                raise translate(exc, where, editing=True) from exc

    async def probe(
        self, chat_id: int, message_id: int, out: Outgoing, *, pace: Pace = unpaced
    ) -> Probe:
        """Whether the message ``message_id`` is a copy of ``out``: an edit to the very same
        content, which Telegram answers "message is not modified" for a copy. Paced as a probe
        (``limits.PROBES``), not as an edit."""
        where = f"telegram probe of {message_id} in {chat_id}"
        async with pace(route(PROBE, chat_id)):
            try:
                await self._edit(chat_id, message_id, out)
            except FAILURES as exc:
                if not_modified(exc):
                    return Probe.COPY
                if edit_gone(exc):
                    return Probe.NOT_OURS
                raise translate(exc, where) from exc
        return Probe.OVERWRITTEN

    async def delete(self, chat_id: int, message_id: int, *, pace: Pace = unpaced) -> bool:
        """Delete a message of ours; True when it is gone (also if it was already), False when
        Telegram will not delete it (older than 48 hours, rights missing)."""
        where = f"telegram deleteMessage {message_id} in {chat_id}"
        async with pace(route("deleteMessage", chat_id)):
            try:
                await self.bot.delete_message(chat_id, message_id)
            except FAILURES as exc:
                said = description(exc)
                if DELETED_ALREADY in said:
                    return True
                if "message can't be deleted" in said:
                    return False
                raise translate(exc, where) from exc
        return True
