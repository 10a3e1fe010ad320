"""``tallybot doctor`` on Slack (``Plugin.doctor``, :mod:`bot.ops.checkup`), without posting:
``auth.test`` (the token, and the workspace it serves) with the scopes Slack says the token has
(its ``x-oauth-scopes`` header) against those tallybot uses (``SCOPES``, the shipped manifest's),
then for each subscribed channel one ``conversations.history`` read (``limit=1``): Slack answers
``not_in_channel`` where the bot is not a member, ``channel_not_found`` where the channel is gone
or private to it, and the read is what the bot needs there anyway (to find what an interrupted
post left, before posting again).

With the OAuth flow and no ``SLACK_BOT_TOKEN``, each workspace's token is in the store: not
checked here (``/count rehearse`` in each workspace is)."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.platform import Checkup, Problem, Subscribed

from .settings import BOT_TOKEN, SCOPES, SlackSettings

FAILURES = (SlackClientError, aiohttp.ClientError, OSError, TimeoutError)
REINSTALL = (
    "add it to the app (OAuth & Permissions; config/slack-manifest.yml lists every scope), then "
    "reinstall the app to the workspace"
)


def scopes_of(headers: Mapping[str, str] | None) -> frozenset[str] | None:
    """The scopes in a Web API answer's ``x-oauth-scopes`` header; None without one."""
    for name, value in (headers or {}).items():
        if name.lower() == "x-oauth-scopes":
            return frozenset(s.strip() for s in value.split(",") if s.strip())
    return None


async def check(settings: SlackSettings, checkup: Checkup) -> list[Problem]:
    token = checkup.secrets.get(BOT_TOKEN)
    if token is None:  # the OAuth flow's tokens are per workspace, in the store
        return []
    # One session: every call on one kept-alive connection (30 s: slack_sdk's own timeout).
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        client = AsyncWebClient(token=token.reveal(), base_url=str(settings.api_base), session=http)
        return await _check(client, checkup)


async def _check(client: AsyncWebClient, checkup: Checkup) -> list[Problem]:
    try:
        auth = await client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error")
        return [
            Problem("slack", f"Slack refused the bot token ({error})",
                    f"set {BOT_TOKEN} to the app's Bot User OAuth Token (xoxb-...)")
        ]  # fmt: skip
    except FAILURES as exc:
        return [Problem("slack", f"auth.test failed: {exc!r}", "check api_base and the network")]
    problems: list[Problem] = []
    granted = scopes_of(auth.headers)
    if granted is not None:
        problems += [
            Problem("slack", f"the app's token lacks the scope {scope}", REINSTALL)
            for scope in SCOPES
            if scope not in granted
        ]
    team = str(auth.get("team_id") or "")
    for sub in checkup.channels:
        problems += await _channel(client, team, sub)
    return problems


async def _channel(client: AsyncWebClient, team: str, sub: Subscribed) -> list[Problem]:
    where = str(sub.channel)
    if team and sub.channel.workspace != team:
        return [
            Problem(where, f"{BOT_TOKEN} serves workspace {team}, not this channel's",
                    "install the app in that workspace (the OAuth flow), or unsubscribe it")
        ]  # fmt: skip
    try:
        await client.conversations_history(channel=sub.channel.channel, limit=1)
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "")
        if error == "not_in_channel":
            return [Problem(where, "the bot is not a member of the channel",
                            "invite it there: /invite @tallybot")]  # fmt: skip
        if error == "channel_not_found":
            return [Problem(where, "the channel is gone, or private and the bot not in it",
                            "invite the bot there, or unsubscribe the channel")]  # fmt: skip
        if error == "missing_scope":
            return []  # reported once, with the scopes
        return [Problem(where, f"Slack answered {error}", "check the channel and the app")]
    except FAILURES as exc:
        return [Problem(where, f"cannot read the channel: {exc!r}", "check the network")]
    return []
