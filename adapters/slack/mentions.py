"""User-group pings on Slack (``mention=@group``): the only mention tallybot ever writes.

A subscription may name a user group that tallybot pings on its calls and its final
(``<!subteam^ID>``, see ``adapters.slack.blocks.ping``). The group is named by its id:
``mention=@S0123ABCD``, or pasted as Slack writes a user group (``<!subteam^S0123ABCD|@team>``,
what a slash command gets when the app asks Slack to escape its text). tallybot does not look
user groups up by name (that would need the ``usergroups:read`` scope). The bot's own mention,
``@tallybot status ...``, is how a command is typed in a message (:func:`strip_mention`).
"""

from __future__ import annotations

import re

from bot.platform import CommandError, Mentions

GROUP = re.compile(r"^(?:<!subteam\^(S[A-Z0-9]{2,20})(?:\|[^>]*)?>|@?(S[A-Z0-9]{2,20}))$")


class SlackMentions(Mentions):
    kind = "user group"

    async def resolve(self, typed: str) -> str:
        found = GROUP.match(typed.strip())
        if found is None:
            raise CommandError(
                f"{typed[:40]!r} is not a user group id: write mention=@S0123ABCD (the id is in "
                "the group's profile, under ⋮ -> Copy group ID)"
            )
        return found.group(1) or found.group(2)


MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The command in ``<@BOT> status bessemer-2021``: what follows the bot's mention."""
    for m in MENTION.finditer(text):
        if bot_user_id is None or m.group(1) == bot_user_id:
            return text[m.end() :].strip()
    return text.strip()
