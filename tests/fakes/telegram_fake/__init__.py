"""A strict local fake of the Telegram Bot API for end-to-end tests with the real library.

`FakeTelegram` serves ``/bot<token>/<method>`` on 127.0.0.1 (port 0) and takes query-string,
urlencoded, JSON and multipart requests, like api.telegram.org. Implemented: getMe,
getUpdates (long polling: offset, limit, timeout, allowed_updates, 409 for a second poller
or while a webhook is set), setWebhook/deleteWebhook/getWebhookInfo (secret_token sent as
X-Telegram-Bot-Api-Secret-Token; updates POSTed in order as they arrive), sendMessage,
sendPhoto (upload or file_id), editMessageText/Caption/ReplyMarkup, deleteMessage,
pinChatMessage/unpinChatMessage, getChat, getChatMember, getChatAdministrators,
setMyCommands/getMyCommands/deleteMyCommands, answerCallbackQuery.

Enforced like Telegram: the token in the path (404 for a malformed one, 401 for a wrong
one), flood control (about 30 sends/s overall, 1/s per chat with short bursts, 20/min per
group or channel, group edits; 429 with parameters.retry_after and Retry-After), 4,096
characters per text and 1,024 per caption after entity parsing, parse_mode HTML /
MarkdownV2 / Markdown with tdlib's error texts, chat types and the bot's membership
(chat not found, bot not a member / kicked / blocked, channel rights, upgraded groups),
"message to edit not found", "message is not modified", "message can't be edited",
delete rules (own messages, admin rights, 48 hours), pin rights, privacy mode in groups.
Telegram's own entities (mentions, bot commands, URLs, hashtags, e-mails) are detected in
every message, so a test can check that hostile text would not ping or link.

Switches: ``fail_next`` (any status, before or after taking effect), ``lose_answer``
(carry the call out, then drop the connection: the duplicate check after a lost answer)
and ``drop_request`` (drop it without carrying it out). ``route_webhook`` sends deliveries for a
public https webhook URL to a loopback server instead (the TLS proxy in front of a real bot).
"""

from .errors import NOT_MODIFIED
from .limits import CAPTION_LIMIT, TEXT_LIMIT, FloodLimits
from .records import RateLimitHit, RecordedRequest, WebhookDelivery
from .server import DEFAULT_TOKEN, FakeTelegram, Injected
from .updates import SECRET_HEADER
from .world import ANONYMOUS_ADMIN_ID, Chat, Revision, StoredMessage, User

__all__ = [
    "ANONYMOUS_ADMIN_ID",
    "CAPTION_LIMIT",
    "DEFAULT_TOKEN",
    "NOT_MODIFIED",
    "SECRET_HEADER",
    "TEXT_LIMIT",
    "Chat",
    "FakeTelegram",
    "FloodLimits",
    "Injected",
    "RateLimitHit",
    "RecordedRequest",
    "Revision",
    "StoredMessage",
    "User",
    "WebhookDelivery",
]
