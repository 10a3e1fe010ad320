"""``tallybot doctor`` on Telegram (``Plugin.doctor``, :mod:`bot.ops.checkup`), without posting:
``getMe`` (the token), then for each subscribed chat ``getChat`` (the bot can reach it) and
``getChatMember`` for the bot itself (it may send text and photos there; in a channel it is an
administrator who may post; where a subscription pins, it may pin)."""

from __future__ import annotations

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramAPIError, TelegramUnauthorizedError
from aiogram.types import (
    ChatMemberAdministrator,
    ChatMemberBanned,
    ChatMemberLeft,
    ChatMemberOwner,
    ChatMemberRestricted,
)

from bot.platform import Checkup, Problem, Subscribed

from .settings import BOT_TOKEN, TelegramSettings

READD = "add the bot to the chat again (as an admin in a channel), then subscribe again"


class OneShotSession(AiohttpSession):
    """aiogram's session without the grace sleep of its ``close()`` (for TLS connections kept
    alive between requests): the doctor closes it once, at the end."""

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


async def check(settings: TelegramSettings, checkup: Checkup) -> list[Problem]:
    token = checkup.secrets.get(BOT_TOKEN)
    if token is None:  # preflight refuses this before; kept for a direct call
        return [Problem("telegram", f"{BOT_TOKEN} is not set", f"export {BOT_TOKEN}=...")]
    api = TelegramAPIServer.from_base(settings.api_base)
    bot = Bot(token.reveal(), session=OneShotSession(api=api))
    try:
        try:
            me = await bot.get_me()
        except TelegramUnauthorizedError:
            return [
                Problem(
                    "telegram",
                    "Telegram refused the bot's token (Unauthorized)",
                    f"set {BOT_TOKEN} to the token @BotFather gives (/token)",
                )
            ]
        except (TelegramAPIError, OSError) as exc:
            return [Problem("telegram", f"getMe failed: {exc}", "check api_base and the network")]
        problems: list[Problem] = []
        for sub in checkup.channels:
            problems += await _chat(bot, me.id, sub)
        return problems
    finally:
        await bot.session.close()


async def _chat(bot: Bot, me: int, sub: Subscribed) -> list[Problem]:
    where = str(sub.channel)
    try:
        chat_id = int(sub.channel.channel)
    except ValueError:
        return [Problem(where, "not a chat id", "subscribe the chat again from inside it")]
    try:
        chat = await bot.get_chat(chat_id)
        member = await bot.get_chat_member(chat_id, me)
    except TelegramAPIError as exc:
        return [Problem(where, f"the bot cannot reach the chat ({exc.message})", READD)]
    if isinstance(member, ChatMemberLeft | ChatMemberBanned):
        return [Problem(where, f"the bot is not in the chat ({member.status})", READD)]
    if isinstance(member, ChatMemberOwner):
        return []
    problems: list[Problem] = []
    admin = member if isinstance(member, ChatMemberAdministrator) else None
    if chat.type == "channel":
        if admin is None or not admin.can_post_messages:
            problems.append(
                Problem(
                    where,
                    "the bot may not post in the channel",
                    "make it an administrator of the channel with Post Messages",
                )
            )
        return problems
    if isinstance(member, ChatMemberRestricted):
        if not member.can_send_messages:
            problems.append(
                Problem(
                    where,
                    "the bot may not send messages (restricted)",
                    "lift the restriction on the bot, or make it an admin",
                )
            )
        if not member.can_send_photos:
            problems.append(
                Problem(
                    where,
                    "the bot may not send photos: a final's chart would be missing",
                    "let the bot send photos there",
                )
            )
    if sub.pins and (admin is None or not admin.can_pin_messages):
        problems.append(
            Problem(
                where,
                f"the bot may not pin messages ({', '.join(sub.counts)} pins its scoreboard)",
                "make the bot an admin with Pin Messages",
            )
        )
    return problems
