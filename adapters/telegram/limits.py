"""Telegram's sending limits as pacing buckets (``bot.delivery.pacing``), derived per request.

The Bot FAQ gives them roughly: about 30 messages per second overall, about one per second
to one chat (short bursts allowed, not counted on here), at most 20 per minute to one group
or channel; edits in groups are limited too (unofficial: taken as 20 per minute as well).
Nothing in the core knows what a group is: the adapter names a request's route by its method
*and the kind of chat* (``route``), so "20 per minute" is one more route in the table below,
not a field of the core. Group, supergroup and channel ids are negative in the Bot API;
private chats are positive.

Every bucket can be changed by name in ``[telegram.limits]`` (``Limits.with_windows``).
"""

from __future__ import annotations

from bot.platform import Bucket, Limits, Route, Window

OVERALL = Bucket("messages", Window(30, 1.0))
PER_CHAT = Bucket("messages per chat", Window(1, 1.0), per_channel=True)
PER_GROUP = Bucket("messages per group", Window(20, 60.0), per_channel=True)
GROUP_EDITS = Bucket("edits per group", Window(20, 60.0), per_channel=True)
PROBES = Bucket("probes", Window(30, 1.0))
"""A repair's probes (``send.TelegramSender.probe``): edits to the very content a copy shows,
answered "message is not modified" or "not found" without changing anything, so not edits
that count against a group's 20 a minute; paced like the bot's requests overall (about 30 a
second), so that one chat's repair takes a second or two, not minutes."""

SENDS = ("sendMessage", "sendPhoto")
REPLY = "reply"
"""A command's answer (``bot.delivery.replies``): a message like any other to Telegram, so it
draws from the same buckets as a post to its chat, ahead of the routine ones."""
EDITS = ("editMessageText", "editMessageCaption")
PROBE = "probe"
"""The route of a repair's probe (an ``editMessageText`` / ``editMessageCaption`` that
changes nothing)."""
IN_GROUP = " in group"
"""The suffix of a route's method when the chat is a group, supergroup or channel."""

TELEGRAM_LIMITS = Limits(
    routes={
        **{m: (OVERALL, PER_CHAT) for m in (*SENDS, REPLY)},
        **{m + IN_GROUP: (OVERALL, PER_CHAT, PER_GROUP) for m in (*SENDS, REPLY)},
        **{m + IN_GROUP: (GROUP_EDITS,) for m in EDITS},
        PROBE: (PROBES,),
        PROBE + IN_GROUP: (PROBES,),
    },
)
"""What the worker paces Telegram requests by. Edits in private chats, deletes and reads
draw from no bucket: Telegram documents no limit for them. A probe that does change a message
(``Probe.OVERWRITTEN``, a message of ours the ledger did not know) may draw a 429, which waits
like any other."""


def is_group(chat_id: int) -> bool:
    """A group, supergroup or channel (negative id), where "20 per minute" applies."""
    return chat_id < 0


def route(method: str, chat_id: int) -> Route:
    """The route of one Bot API request to ``chat_id``, as ``TELEGRAM_LIMITS`` names it.

    >>> route("sendMessage", -1001500000001)
    Route(method='sendMessage in group', channel='-1001500000001')
    >>> route("sendMessage", 10001).method
    'sendMessage'
    """
    return Route(method + (IN_GROUP if is_group(chat_id) else ""), str(chat_id))
