"""discord.py's own retries, turned off: every retry is the bot's, through its pacing.

discord.py's REST client retries a request by itself: a 429 is slept through and sent again
(``discord/http.py``, up to ``max_ratelimit_timeout``), and so are 500, 502, 504 and 524 (after
1 + 2 * tries seconds); its webhook client, which answers interactions, does the same for a
429 and any 5xx. Such a retry happens under the first attempt's check: a delivery whose
subscription was removed in between (``Unsubscribed this channel``) still went out, seconds
later, and a reply was sent twice when Discord had carried out the first try.

:func:`without_retries` adds to the ``http_trace`` of discord.py's session (every request of
the bot's clients, interactions included, goes through it) a hook that raises, right where the
answer arrives, what discord.py would otherwise retry: a 429 as ``discord.RateLimited`` (its
``retry_after``), a server error as ``discord.DiscordServerError``. discord.py lets both
through unretried, the adapter translates them (``RateLimited``, ``TransientDeliveryError``),
and the dispatcher (or ``bot.delivery.replies``) decides whether and when to try again: paced,
and with the attempt noted and checked again. A 429 that discord.py takes for a Cloudflare ban
(no ``Via`` header, or no JSON body) is raised as it is already.
"""

from __future__ import annotations

import json

import aiohttp

from adapters.discord.lib import discord

RETRIED = frozenset({500, 502, 504, 524})
"""The server errors discord.py's REST client retries (its webhook client retries every 5xx)."""


def without_retries(trace: aiohttp.TraceConfig) -> aiohttp.TraceConfig:
    """``trace``, also raising each answer discord.py would retry by itself (see the module
    docstring); its other hooks (``adapters.discord.ratelimits``) run first."""
    trace.on_request_end.append(_raise_retried)
    return trace


async def _raise_retried(
    session: aiohttp.ClientSession, ctx: object, params: aiohttp.TraceRequestEndParams
) -> None:
    response = params.response
    status = response.status
    if status != 429 and status < 500:
        return
    text = await response.text()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if status == 429:
        if not response.headers.get("Via") or not isinstance(data, dict):
            return  # discord.py raises this one itself (a Cloudflare ban)
        raise discord.RateLimited(float(data.get("retry_after") or 1.0))
    raise discord.DiscordServerError(response, data if isinstance(data, dict) else text)
