"""aiogram's errors as tallybot's delivery errors, and which failures may have taken effect.

Every Bot API answer with an ``error_code`` means Telegram did nothing: 429 waits
``retry_after`` (``RateLimited``); 403 (kicked, blocked, not a member) and 400 "chat not
found" or any other refusal are permanent; "message to edit not found" / "message can't be
edited" make an edit ``MessageGone``; a 400 with ``migrate_to_chat_id`` (a group that became a
supergroup) is ``ChannelMoved``, to the new chat; "message is not modified" is no error at all (the
caller checks ``not_modified`` first). No answer is different: ``maybe_sent`` tells a request
that never reached Telegram (the connection was refused: a plain retry is safe) from one that
may have been carried out (a dropped connection, a timeout, a 5xx, an answer we could not
read), which ``adapters.telegram.once`` repairs.
"""

from __future__ import annotations

import aiohttp
from aiogram.exceptions import (
    AiogramError,
    ClientDecodeError,
    TelegramAPIError,
    TelegramBadRequest,
    TelegramConflictError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)

from bot.platform import (
    ChannelMoved,
    DeliveryError,
    MessageGone,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)

NOT_MODIFIED = "message is not modified"
GONE = ("message to edit not found", "message can't be edited", "there is no text in the message",
        "there is no caption in the message")  # fmt: skip
DELETED_ALREADY = "message to delete not found"
ADD_BOT = "add the bot to the chat again (to a channel as an administrator who may post)"
"""The fix when Telegram does not say what kind of chat it is."""
FAILURES = (AiogramError, aiohttp.ClientError, OSError, TimeoutError)
"""What a Bot API call through aiogram can raise for a failure of the call itself."""


def description(exc: BaseException) -> str:
    """Telegram's description of an error answer ("Bad Request: chat not found")."""
    return exc.message if isinstance(exc, TelegramAPIError) else str(exc)


def fix_for(said: str) -> str:
    """What the admins do about a 403, by the kind of chat Telegram names in it."""
    if "channel chat" in said:
        return "add the bot to the channel again, as an administrator who may post messages"
    if "group chat" in said:  # a group or a supergroup
        return "add the bot to the group again"
    if "user" in said:
        return "the person must start the bot (or unblock it) again"
    return ADD_BOT


def not_modified(exc: BaseException) -> bool:
    """An edit answered "message is not modified": the message already shows that content."""
    return isinstance(exc, TelegramBadRequest) and NOT_MODIFIED in exc.message


def edit_gone(exc: BaseException) -> bool:
    """An edit answered that there is no such message of ours (or it cannot take that edit)."""
    return isinstance(exc, TelegramBadRequest) and any(g in exc.message for g in GONE)


def maybe_sent(exc: BaseException) -> bool:
    """Whether the request may have been carried out although no success came back.

    False for every error answer (Telegram did nothing) and for a connection that was never
    made; True for a dropped connection, a timeout, a 5xx, or an answer that was not JSON."""
    if isinstance(exc, TelegramServerError | ClientDecodeError):
        return True
    if isinstance(exc, TelegramEntityTooLarge):
        return False  # refused before it was sent
    if isinstance(exc, TelegramNetworkError):
        return not isinstance(exc.__cause__, aiohttp.ClientConnectorError)
    if isinstance(exc, TelegramAPIError):
        return False
    return not isinstance(exc, aiohttp.ClientConnectorError)


class MaybeSent(TransientDeliveryError):
    """No answer came, and the request may have been carried out all the same (a dropped
    connection, a timeout, a 5xx): a post is then in doubt, and repaired, never resent blindly."""


def translate(exc: BaseException, where: str, *, editing: bool = False) -> DeliveryError:
    """An aiogram / aiohttp failure as a tallybot delivery error (raise it ``from exc``)."""
    said = description(exc)
    if maybe_sent(exc):
        return MaybeSent(f"{where}: no answer from Telegram, maybe carried out ({said})")
    if isinstance(exc, TelegramRetryAfter):
        return RateLimited(f"{where}: rate limited by Telegram (429)", retry_after=exc.retry_after)
    if editing and edit_gone(exc):
        return MessageGone(f"{where}: the message to edit is gone ({said})")
    if isinstance(exc, TelegramMigrateToChat):
        new = str(exc.migrate_to_chat_id)
        return ChannelMoved(
            f"{where}: the group became the supergroup {new}", workspace=new, channel=new
        )
    if isinstance(exc, TelegramForbiddenError):
        return PermanentDeliveryError(f"{where}: Telegram refused ({said}): {fix_for(said)}")
    if isinstance(exc, TelegramUnauthorizedError | TelegramNotFound):
        return PermanentDeliveryError(
            f"{where}: Telegram refused the bot's token ({said}): check TELEGRAM_BOT_TOKEN"
        )
    if isinstance(exc, TelegramBadRequest) and "chat not found" in said:
        return PermanentDeliveryError(f"{where}: chat not found: the chat is gone, or {ADD_BOT}")
    if isinstance(exc, TelegramServerError | TelegramConflictError):
        return TransientDeliveryError(f"{where}: Telegram failed ({said})")
    if isinstance(exc, TelegramBadRequest | TelegramEntityTooLarge):
        return PermanentDeliveryError(f"{where}: Telegram refused the request ({said})")
    if isinstance(exc, TelegramAPIError) and not isinstance(exc, TelegramNetworkError):
        return PermanentDeliveryError(f"{where}: Telegram refused the request ({said})")
    return TransientDeliveryError(
        f"{where}: no answer from Telegram ({type(exc).__name__}: {said})"
    )
