"""How the bot keeps its gateway connection, where discord.py's defaults differ from Discord's
guidance.

- A zombie connection (heartbeats sent, no Heartbeat ACK back) is given up at the first missed
  ACK: discord.py gives a connection up when nothing at all arrived for ``heartbeat_timeout``
  seconds (60 by default, and it reads every frame, not only ACKs). An ACK comes back once per
  heartbeat interval (Discord's HELLO says 41.25 s), so a tenth of an interval past one, an ACK
  was missed: the connection is closed and RESUMEd, as Discord asks.
- Closes 4007 (invalid seq) and 4009 (session timed out) end the session: Discord wants a new
  one (IDENTIFY). discord.py RESUMEs after every close it may reconnect from, which Discord
  answers with an Invalid Session, one round trip and one more connection later. ``Gateway``
  starts the new session at once.
"""

from __future__ import annotations

from adapters.discord.lib import discord

HEARTBEAT_INTERVAL_S = 41.25
"""Discord's heartbeat interval (HELLO's ``heartbeat_interval``, the same for every bot)."""
ACK_GRACE = 0.1
"""How late past one interval an ACK may be, as a share of the interval (about 4 s)."""
NEW_SESSION = frozenset({4007, 4009})


def heartbeat_timeout(interval_s: float = HEARTBEAT_INTERVAL_S) -> float:
    """discord.py's ``heartbeat_timeout`` that gives a connection up at its first missed ACK."""
    return interval_s * (1 + ACK_GRACE)


class Gateway(discord.gateway.DiscordWebSocket):
    """discord.py's gateway connection, starting a new session after 4007 and 4009."""

    async def poll_event(self) -> None:
        try:
            await super().poll_event()
        except discord.gateway.ReconnectWebSocket as reconnect:
            if reconnect.resume and self.socket.close_code in NEW_SESSION:
                self.session_id = None
                self.sequence = None
                raise discord.gateway.ReconnectWebSocket(self.shard_id, resume=False) from None
            raise


# discord.py's Client.connect makes each connection with ``DiscordWebSocket.from_client``, the
# name as its module sees it: the one place to hand it this class.
discord.client.DiscordWebSocket = Gateway  # type: ignore[misc]
