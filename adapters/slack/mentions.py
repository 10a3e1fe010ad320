"""User-group pings on Slack (``mention=@group``): the only mention tallybot ever writes.

A subscription may name a user group that tallybot pings on its calls and its final
(``<!subteam^ID>``, see ``adapters.slack.blocks.ping``). The group is named by its id:
``mention=@S0123ABCD``, or pasted as Slack writes a user group (``<!subteam^S0123ABCD|@team>``,
what a slash command gets when the app asks Slack to escape its text). tallybot does not look
user groups up by name (that would need the ``usergroups:read`` scope).
"""

from __future__ import annotations

import re

from bot.commands.request import Mentions
from bot.errors import CommandError

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
