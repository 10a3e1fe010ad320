"""The names of deleted channels the Discord adapter remembers (to name them in the notice that
a subscription was disabled): the latest ``NAMES_KEPT``, the least recently used forgotten."""

from __future__ import annotations

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.delivery import NAMES_KEPT
from adapters.discord.settings import DiscordSettings
from bot.domain.subscription import ChannelRef, Platform
from bot.settings.secrets import Secret
from tests.helpers import bare_context


def where(channel_id: int) -> ChannelRef:
    return ChannelRef(Platform("discord"), "1", str(channel_id))


def test_the_latest_deleted_channels_keep_their_names() -> None:
    adapter = DiscordAdapter(
        DiscordSettings(), bare_context(secrets={"DISCORD_TOKEN": Secret("DISCORD_TOKEN", "t")})
    )
    for channel_id in range(NAMES_KEPT):
        adapter.remember_channel_name(channel_id, f"hall-{channel_id}")
    assert adapter.describe(where(0)) == "#hall-0"  # used: now the latest
    adapter.remember_channel_name(NAMES_KEPT, "news")  # one more: hall-1 is forgotten
    assert [adapter.describe(where(n)) for n in (0, 1, 2, NAMES_KEPT)] == [
        "#hall-0",
        "channel 1",
        "#hall-2",
        "#news",
    ]
